import threading

import pytest

from ansible_collections.kubescale.tuning.plugins.plugin_utils import _arm_lister as arm
from ansible_collections.kubescale.tuning.plugins.plugin_utils._azure_inventory import Request


class FakeArm:
    """Pages of `pages[url]`, with nextLinks; `faults[url]` answers to give first (a list of (status, headers))."""

    def __init__(self, pages, faults=None):
        self.pages, self.faults = pages, dict(faults or {})
        self.sent, self.lock = [], threading.Lock()

    def send(self, url, params):
        with self.lock:
            self.sent.append(url)
            pending = self.faults.get(url)
            if pending:
                status, headers = pending.pop(0)
                return arm.Answer(status, headers, {"error": {"code": "Injected", "message": "by the test"}})
        if url not in self.pages:
            return arm.Answer(404, {}, {"error": {"code": "ResourceNotFound", "message": url}})
        return arm.Answer(200, {}, self.pages[url])


def test_every_page_and_what_it_leads_to_is_read():
    fake = FakeArm({"/a": {"value": [1, 2], "nextLink": "/a?2"}, "/a?2": {"value": [3]}, "/b": {"value": [4]}})
    seen = []

    def on_page(request, body):
        seen.extend(body["value"])
        return [Request("/b", {"api-version": "x"}, "b")] if request.url == "/a" else []

    arm.Lister(fake.send, workers=4, sleep=lambda s: None).run([Request("/a", {"api-version": "x"}, "a")], on_page)
    assert sorted(seen) == [1, 2, 3, 4]
    assert fake.sent[0] == "/a"  # the first request alone, before any other


def test_throttling_is_retried_after_retry_after_and_a_refusal_is_an_error_naming_the_url():
    waits = []
    fake = FakeArm({"/a": {"value": []}}, faults={"/a": [(429, {"Retry-After": "7"}), (503, {})]})
    lister = arm.Lister(fake.send, retry_limit=3, max_delay=60, sleep=waits.append)
    lister.run([Request("/a", {"api-version": "x"}, "a")], lambda r, b: [])
    assert waits == [7.0, 2.0] and fake.sent == ["/a"] * 3

    fake = FakeArm({}, faults={"/ss/cpu/virtualMachines": [(403, {})]})
    lister = arm.Lister(fake.send, retry_limit=3, sleep=waits.append)
    with pytest.raises(arm.ArmError, match=r"HTTP 403 to GET /ss/cpu/virtualMachines\?api-version=x: Injected"):
        lister.run([Request("/ss/cpu/virtualMachines", {"api-version": "x"}, "instances")], lambda r, b: [])


def test_retries_run_out_into_an_error_and_a_404_is_none_only_when_allowed():
    fake = FakeArm({"/a": {"value": []}}, faults={"/a": [(500, {})] * 5})
    lister = arm.Lister(fake.send, retry_limit=2, sleep=lambda s: None)
    with pytest.raises(arm.ArmError, match="still failing after 2 retries"):
        lister.get(Request("/a", {"api-version": "x"}, "a"))
    assert lister.get(Request("/gone", {"api-version": "x"}, "nic"), missing_ok=True) is None
    with pytest.raises(arm.ArmError, match="HTTP 404"):
        lister.get(Request("/gone", {"api-version": "x"}, "nic"))


def test_an_error_in_a_worker_stops_the_run():
    fake = FakeArm({"/a": {"value": []}, "/b": {"value": []}}, faults={"/c": [(400, {})]})
    lister = arm.Lister(fake.send, workers=2, sleep=lambda s: None)
    requests = [Request(u, {"api-version": "x"}, "k") for u in ("/a", "/b", "/c")]
    with pytest.raises(arm.ArmError, match="HTTP 400 to GET /c"):
        lister.run(requests, lambda r, b: [])
