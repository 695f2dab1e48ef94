# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""For bench/worker_cpu.py only: each forked worker's own CPU (user+sys, from the fork to its result) with its task's
action, one JSON line per task and host in $WORKER_CPU_OUT. The workers' CPU is most of the controller's per task and
host; this splits it by task without a profiler's overhead."""

from __future__ import annotations

import json
import os
import resource

from ansible.executor.process import worker
from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: worker_cpu
type: aggregate
short_description: each worker's CPU by task (bench/worker_cpu.py)
description: [Writes each forked worker's own CPU-s with its task's action and name to $WORKER_CPU_OUT.]
"""

_run = worker.WorkerProcess._run


def _measured(self):
    try:
        return _run(self)
    finally:
        use = resource.getrusage(resource.RUSAGE_SELF)
        line = json.dumps(dict(action=self._task.action, task=self._task.get_name(), host=self._host.name,
                               cpu_s=use.ru_utime + use.ru_stime))
        fd = os.open(os.environ["WORKER_CPU_OUT"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())  # one write of a short line: whole under O_APPEND
        finally:
            os.close(fd)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "worker_cpu"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        worker.WorkerProcess._run = _measured
