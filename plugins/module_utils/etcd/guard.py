# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: start an etcd member only under an identity whose data it has.

etcd's rule: a member whose data is lost is removed from its cluster and added again (a new member ID), never started
under its old ID with an empty raft log - it would count towards quorum and could vote before it panics
(`tocommit(N) is out of range [lastIndex(0)]`), and a committed write could be lost.

So the member's start state comes from its disk, at every start, boot included:
  - data (`<data dir>/member` exists): etcd starts; it ignores --initial-cluster-state;
  - no data, and an admission beside the data directory (`<data dir>.admitted`, on the same disk, so that a wipe of the
    SSD takes it along): etcd starts with the state it names - `new` (the role bootstraps a brand-new cluster) or
    `existing` (the role re-added the member through a peer, under a new ID). The unit removes it once etcd is ready;
  - no data and no admission: the member does not start (exit 78, which its unit does not restart on) until a
    playbook run re-adds it.

One implementation for two callers: the module kubescale.tuning.etcd_start_info reads the same state, and the
events_etcd role installs this file as /usr/local/lib/kubescale/etcd_guard.py, which etcd-events.service runs as
`python3 etcd_guard.py DATA_DIR -- ETCD [ARGS...]` (the process then becomes etcd: its PID, its sd_notify).
Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

REFUSED = 78  # EX_CONFIG: the unit's RestartPreventExitStatus
STATES = ("new", "existing")


def admission_path(data_dir):
    return data_dir.rstrip("/") + ".admitted"


def has_data(data_dir):
    return os.path.isdir(os.path.join(data_dir, "member"))


def read_admission(data_dir):
    """The state the admission names, '' when there is none; an admission naming anything else is none."""
    try:
        with open(admission_path(data_dir)) as f:
            text = f.read().strip()
    except (IOError, OSError):
        return ""
    return text if text in STATES else ""


def decide(data_dir):
    """(state, why): state is 'data' (start as it is), 'new' or 'existing' (start with that initial cluster state),
    or '' (refuse)."""
    if has_data(data_dir):
        return "data", "%s holds the member's data" % data_dir
    state = read_admission(data_dir)
    if state:
        return state, "%s is empty and %s admits it as %s" % (data_dir, admission_path(data_dir), state)
    return "", ("refusing to start: %s holds no data (no member directory: the disk was wiped) and nothing admits it "
                "(%s): the cluster still lists this member under the ID whose raft log is gone. A playbook run "
                "re-adds it under a new ID (kubescale.tuning.events_etcd)." % (data_dir, admission_path(data_dir)))


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: etcd_guard.py DATA_DIR -- ETCD [ARGS...]\n")
        return 2
    data_dir, command = argv[0], argv[2:]
    state, why = decide(data_dir)
    sys.stderr.write("etcd-guard: %s\n" % why)
    sys.stderr.flush()
    if not state:
        return REFUSED
    env = dict(os.environ)
    if state in STATES:
        env["ETCD_INITIAL_CLUSTER_STATE"] = state
    os.execve(command[0], command, env)
    return 1  # not reached


if __name__ == "__main__":
    raise SystemExit(main())
