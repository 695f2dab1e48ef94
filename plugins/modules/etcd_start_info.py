#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: etcd_start_info
short_description: Read how an etcd member this collection runs starts - its binary, data, last fact and SSD marker
version_added: "0.5.0"
description:
  - Read-only. Reads, in one call, the member's binary, its data directory, the last run's fact and the local SSD's
    wipe marker.
  - Fails, saying nothing was changed and naming O(binary_variable), when O(binary) is not an executable.
  - Decides whether the data was wiped (the wipe marker changed since the last run recorded it), whether the member
    is re-added through a peer (no data, a fact recorded, other members) or starts a brand-new cluster (no data and
    nothing to rejoin).
  - With O(unit), also whether the member's unit is loaded, active and enabled (one C(systemctl show)), so a role
    runs its enable-and-start step only when it has something to do (RV(start)).
author:
  - kubescale.tuning contributors (@kubescale)
options:
  binary:
    description: The etcd binary.
    type: path
    required: true
  binary_variable:
    description: The variable that set O(binary), named when it is not an executable.
    type: str
    default: binary
  data_dir:
    description: The member's data directory (its C(member) directory is the data).
    type: path
    required: true
  fact:
    description: What the last run recorded (JSON); missing on a member never converged.
    type: path
    required: true
  marker:
    description: The local SSD's wipe marker (JSON with C(wiped_at)).
    type: path
    default: /var/lib/kubescale/local-ssd.wiped
  members:
    description: How many members the cluster has.
    type: int
    required: true
  unit:
    description:
      - The member's systemd unit, asked with C(systemctl show) for RV(running) and RV(start).
      - Without it RV(running) is false and RV(start) true.
    type: str
  reads:
    description:
      - Files the member reads when it starts (its configuration, its certificates), for RV(stale).
    type: list
    elements: path
    default: []
extends_documentation_fragment:
  - kubescale.tuning.attributes
  - kubescale.tuning.attributes.info
"""

EXAMPLES = r"""
- name: Read how the member starts
  kubescale.tuning.etcd_start_info:
    binary: /usr/bin/etcd
    binary_variable: events_etcd_binary
    data_dir: /mnt/local-ssd/etcd-events
    fact: /etc/ansible/facts.d/kubescale_events_etcd.fact
    members: 3
    unit: etcd-events.service
  register: member
"""

RETURN = r"""
data_exists:
  description: Whether the member's C(member) directory exists.
  returned: success
  type: bool
recorded:
  description: What the last run recorded (empty when nothing was, or it is not JSON).
  returned: success
  type: dict
ssd_marker:
  description: The wipe marker's time, or an empty string.
  returned: success
  type: str
wiped:
  description: Whether the SSD was formatted since the last run recorded its marker.
  returned: success
  type: bool
rejoin:
  description: Whether the member is to be re-added through a healthy peer.
  returned: success
  type: bool
bootstrap:
  description: Whether the member starts a brand-new cluster.
  returned: success
  type: bool
running:
  description: Whether O(unit) is loaded, active and enabled (false without O(unit)).
  returned: success
  type: bool
start:
  description:
    - Whether enabling and starting the unit has anything to do, in this run - the unit is not running (RV(running)),
      or the member is stopped for a wipe, re-added or bootstrapped on the way. True without O(unit).
  returned: success
  type: bool
stale:
  description:
    - The files of O(reads) written after the unit's main process started, which it runs without - a run that wrote
      them died before it restarted the member. Empty when the unit does not run, or without O(unit).
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.etcd.guard import has_data
from ansible_collections.kubescale.tuning.plugins.module_utils.etcd.member import (
    parse_show,
    process_started,
    stale_reads,
    start_plan,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import read_text


def main():
    module = AnsibleModule(
        argument_spec=dict(
            binary=dict(type="path", required=True),
            binary_variable=dict(type="str", default="binary"),
            data_dir=dict(type="path", required=True),
            fact=dict(type="path", required=True),
            marker=dict(type="path", default="/var/lib/kubescale/local-ssd.wiped"),
            members=dict(type="int", required=True),
            unit=dict(type="str"),
            reads=dict(type="list", elements="path", default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not (os.path.isfile(p["binary"]) and os.access(p["binary"], os.X_OK)):
        module.fail_json(msg="%s: %s is not an executable on this node (install etcd, e.g. Debian/Ubuntu's "
                             "etcd-server, or point %s at it). Nothing was changed."
                             % (p["binary_variable"], p["binary"], p["binary_variable"]))
    unit_show = None
    if p["unit"]:
        argv = [module.get_bin_path("systemctl", required=True), "show", "-p", "LoadState", "-p", "ActiveState",
                "-p", "UnitFileState", "-p", "MainPID", "--", p["unit"]]
        rc, unit_show, err = module.run_command(argv)
        if rc != 0:
            module.fail_json(msg="cannot ask systemd about %s: %s. Nothing was changed." % (p["unit"], err.strip()))
    try:
        plan = start_plan(has_data(p["data_dir"]), read_text(p["fact"]),
                          read_text(p["marker"]), p["members"], unit_show)
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot read %s: %s. Nothing was changed." % (getattr(exc, "filename", ""), exc))
    pid = parse_show(unit_show).get("MainPID", "0") if unit_show is not None else "0"
    plan["stale"] = stale_reads(p["reads"], process_started(pid) if pid not in ("", "0") else None)
    module.exit_json(changed=False, **plan)


if __name__ == "__main__":
    main()
