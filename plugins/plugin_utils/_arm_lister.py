# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: ARM GETs, several at a time, each a success, a retry or an error (standard library only).

`run` sends the first request alone (a credential Azure refuses fails there, before anything else is asked), then
keeps up to `workers` requests in flight. Each answer is handed to `on_page` in the calling thread, one at a time, in
the order the answers arrive; what it returns is asked next, and so is the answer's `nextLink`. A 408, 429 or 5xx is
asked again after the larger of Retry-After and an exponential backoff from 1 s (capped at `max_delay`), at most
`retry_limit` times; any other answer that is not 200 stops the run with ARM's status, code, message and URL (a 404
goes to `on_missing` when one is given). Nothing is dropped: a run returns only when every page was read.
"""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass

from ansible_collections.kubescale.tuning.plugins.plugin_utils import _azure_inventory as decide


class ArmError(Exception):
    """An ARM answer that is neither a success nor worth another try, or retries that ran out."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict
    body: object


class Lister:
    """`send(url, params) -> Answer` does one HTTP GET; it must be safe to call from several threads."""

    def __init__(self, send, workers=8, retry_limit=6, max_delay=60.0, sleep=time.sleep):
        self._send, self.workers = send, max(1, workers)
        self.retry_limit, self.max_delay, self._sleep = retry_limit, max_delay, sleep

    def get(self, request, missing_ok=False):
        """One request's body after retries; None for a 404 when `missing_ok`."""
        attempt = 0
        while True:
            answer = self._send(request.url, request.params)
            if answer.status == 200:
                return answer.body
            if answer.status == 404 and missing_ok:
                return None
            if answer.status not in decide.RETRY_STATUSES:
                raise ArmError(decide.describe_error("GET", request.describe(), answer.status, answer.body))
            attempt += 1
            if attempt > self.retry_limit:
                raise ArmError("azure_rm: GET %s still failing after %d retries (last: HTTP %s)"
                               % (request.describe(), self.retry_limit, answer.status))
            self._sleep(min(max(decide.retry_after(answer.headers, 0), 2.0 ** (attempt - 1)), self.max_delay))

    def run(self, requests, on_page, missing_ok=False):
        """Ask `requests` and all they lead to; `on_page(request, body)` returns the requests it makes necessary."""
        queue = list(requests)
        if not queue:
            return
        first = queue.pop(0)
        queue.extend(self._follow(first, self.get(first, missing_ok), on_page))
        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="arm")
        pending = {}
        try:
            while queue or pending:
                while queue and len(pending) < self.workers:
                    request = queue.pop(0)
                    pending[pool.submit(self.get, request, missing_ok)] = request
                done, _pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    request = pending.pop(future)
                    queue.extend(self._follow(request, future.result(), on_page))
        finally:
            # on an error, what is still queued is not asked (a request already on the wire finishes on its own)
            pool.shutdown(wait=not pending, cancel_futures=True)

    @staticmethod
    def _follow(request, body, on_page):
        asks = list(on_page(request, body) or [])
        next_link = body.get("nextLink") if isinstance(body, dict) else None
        if next_link:
            asks.insert(0, decide.Request(next_link, None, request.kind, request.owner))
        return asks
