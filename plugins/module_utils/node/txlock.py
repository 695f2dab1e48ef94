# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: one transaction at a time on a node. A controller that dies does not stop the module it started on the
node (over ssh without a tty the module runs on to its end), so the next run's module may start while the last one is
still inside the same transaction; it waits for that one here. The kernel drops the lock when its holder exits,
however it exits."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fcntl
import os
import re
import time

LOCK_DIR = "/run/lock"


class LockTimeout(Exception):
    pass


def lock_path(transaction, name, lock_dir=LOCK_DIR):
    """The lock file of `transaction` for `name` (a member, a store): one file per pair, its name made safe."""
    return os.path.join(lock_dir, "kubescale-%s-%s.lock" % (transaction, re.sub(r"[^A-Za-z0-9_.-]", "_", name)))


def hold(path, timeout, sleep=time.sleep, clock=time.monotonic):
    """Take the exclusive lock on `path` (created when missing), waiting up to `timeout` seconds for its holder;
    returns the open file, which holds the lock until it is closed or the process exits. Raises LockTimeout."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    f = open(path, "a")
    deadline = clock() + timeout
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return f
        except (IOError, OSError):
            if clock() >= deadline:
                f.close()
                raise LockTimeout("%s is held by another run's module for more than %ds" % (path, timeout)) from None
            sleep(0.5)
