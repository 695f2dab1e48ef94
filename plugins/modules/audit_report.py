#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: audit_report
short_description: Judge what kubescale.tuning.fleet_audit read on every node, and write a JSON and an HTML report
version_added: "0.4.0"
description:
  - Runs on the controller (an action plugin). Reads, for each host of O(hosts), what the fleet_audit role
    registered there (module results and the kubescale local facts), turns it into checks - green, amber or red,
    each with a message saying what and where - and writes C(audit.json) and C(audit.html) into O(dir).
  - C(audit.json) has the schema C(kubescale.tuning/audit/v1) (see docs/audit.md) with the keys
    C(schema), C(generated_at), C(check_mode), C(thresholds), C(totals) (nodes per worst status), C(classes) (per
    node class the nodes, green/amber/red nodes and checks), C(failing) (every amber and red check, reddest first)
    and C(nodes) (per host its class, worst status and every check with C(area), C(check), C(status), C(message),
    C(value), C(threshold)).
  - C(audit.html) is one self-contained page (inline CSS, SVG plots and a sorting script, no external assets) with the
    summary per class, the thresholds, the failing checks (sortable), plots of etcd database vs quota per member,
    fdatasync p99 per SSD and neighbour-table fill per node, and every node.
  - A host of O(hosts) without audit data (unreachable, or the role did not finish there) gets one red check.
  - Both files are written atomically, in check mode too (they are the audit's output, on the controller).
author:
  - kubescale.tuning contributors (@kubescale)
options:
  hosts:
    description: The audited hosts (for example C(query('inventory_hostnames', 'etcd:kube_node_cpu'))).
    type: list
    elements: str
    required: true
  dir:
    description: Directory on the controller for the report; created when missing. Relative to the working directory.
    type: path
    required: true
  thresholds:
    description:
      - Amber and red thresholds; the keys not given keep their defaults.
      - C(neigh_amber) 0.6, C(neigh_red) 0.85 (entries / gc_thresh3); C(etcd_db_amber) 0.6, C(etcd_db_red) 0.8
        (database / quota); C(etcd_revision_lag_amber) 1000; C(snapshot_amber_hours) 26, C(snapshot_red_hours) 72;
        C(fdatasync_p99_amber_ms) 5, C(fdatasync_p99_red_ms) 10; C(events_etcd_expected) true.
    type: dict
    default: {}
  fail_on_red:
    description: Fail (after writing the report) when any check is red.
    type: bool
    default: true
extends_documentation_fragment:
  - kubescale.tuning.attributes
attributes:
  check_mode:
    support: full
    details: Nothing changes on any node; the report is written on the controller in check mode as well.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - An action plugin; it needs no connection to the hosts it reports on.
seealso:
  - module: kubescale.tuning.neigh_report
  - module: kubescale.tuning.etcd_cluster
"""

EXAMPLES = r"""
- name: Judge every node and write the report
  kubescale.tuning.audit_report:
    hosts: "{{ query('inventory_hostnames', 'etcd:etcd_events:kube_control_plane:kube_node_cpu:kube_node_gpu') }}"
    dir: kubescale-audit
    thresholds: {etcd_db_red: 0.75}
  check_mode: false
"""

RETURN = r"""
json:
  description: Path of the JSON report.
  returned: always
  type: str
  sample: kubescale-audit/audit.json
html:
  description: Path of the HTML report.
  returned: always
  type: str
totals:
  description: Nodes per worst status, and C(nodes).
  returned: always
  type: dict
  sample: {green: 12, amber: 0, red: 1, nodes: 13}
classes:
  description: Per node class, nodes, nodes green/amber/red and checks per status.
  returned: always
  type: dict
red:
  description: The red checks, one line each (node, area/check, message).
  returned: always
  type: list
  elements: str
"""


from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.audit.report import ARGUMENT_SPEC


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="kubescale.tuning.audit_report runs as an action plugin on the controller")


if __name__ == "__main__":
    main()
