# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""For tests/integration/site_twice.sh: every task's result on every host, one JSON line each in
$KUBESCALE_TASK_RESULTS, so that a --check run and the real run are compared task by task (tests/integration/
task_results.py), not by their recap counts. The default callback still prints the run."""

from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: task_results
type: aggregate
short_description: every task's result per host as JSON lines (tests/integration/site_twice.sh)
description: [Writes each task's status on each host - ok, changed, skipped, failed, unreachable - the seconds since
  the task started and which start of it that was (a rolling play starts a task once per batch) to
  $KUBESCALE_TASK_RESULTS.]
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_results"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._play = ""
        self._started = time.monotonic()
        self._start = 0  # task starts so far: one per task per batch
        self._out = os.environ.get("KUBESCALE_TASK_RESULTS")

    def v2_playbook_on_play_start(self, play):
        self._play = play.get_name()

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._started = time.monotonic()
        self._start += 1

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def _write(self, result, status):
        if not self._out:
            return
        task = result._task
        line = {"play": self._play, "task": task.get_name(), "path": task.get_path() or "", "action": task.action,
                "host": result._host.get_name(), "status": status,
                "seconds": round(time.monotonic() - self._started, 2), "start": self._start}
        if status == "ok" and result._result.get("changed"):
            line["status"] = "changed"
        with open(self._out, "a") as f:
            f.write(json.dumps(line, sort_keys=True) + "\n")

    def v2_runner_on_ok(self, result):
        self._write(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._write(result, "ignored" if ignore_errors else "failed")

    def v2_runner_on_skipped(self, result):
        self._write(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._write(result, "unreachable")
