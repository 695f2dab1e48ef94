#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: neigh_report
short_description: Report neighbour (ARP/NDP) table pressure for an audit
version_added: "0.1.0"
description:
  - Reads the neighbour table statistics (C(/proc/net/stat/arp_cache), C(/proc/net/stat/ndisc_cache))
    - current entries and C(table_fulls), the kernel's count of C(neighbor table overflow!) events -
    and compares the entries with C(gc_thresh3).
  - Those files exist only in the initial network namespace; elsewhere (containers) the entries are
    counted with C(ip -j neigh show) and C(table_fulls) is null.
  - Counts "neighbor table overflow" lines in the kernel log when it is readable (it is not in most
    containers), and says where the count came from.
  - Returns the report as the fact C(kubescale_neigh). Changes nothing.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  gc_thresh3:
    description:
      - The configured C(gc_thresh3) per family, used when the live key is not visible in this
        namespace (containers). Keys C(ipv4), C(ipv6).
    type: dict
    default: {}
extends_documentation_fragment:
  - kubescale.tuning.attributes
attributes:
  check_mode:
    support: full
    details: Reads only; runs the same in check mode.
  diff_mode:
    support: none
  platform:
    platforms: linux
"""

EXAMPLES = r"""
- name: Report ARP table pressure
  kubescale.tuning.neigh_report:
    gc_thresh3:
      ipv4: 100000
      ipv6: 100000
"""

RETURN = r"""
ansible_facts:
  description: The report.
  returned: always
  type: dict
  contains:
    kubescale_neigh:
      description: Per family (C(ipv4), C(ipv6)) entries, gc_thresh3, usage ratio, table_fulls; kernel log counts.
      type: dict
      sample:
        ipv4: {entries: 3, entries_source: /proc/net/stat/arp_cache, gc_thresh3: 100000, gc_thresh3_source: live,
               usage: 0.00003, table_fulls: 0}
        ipv6: {entries: 1, entries_source: ip neigh, gc_thresh3: 100000, gc_thresh3_source: configured,
               usage: 0.00001, table_fulls: null}
        kernel_log_overflow_messages: 0
        kernel_log_source: dmesg
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

STAT_FILES = {"ipv4": "/proc/net/stat/arp_cache", "ipv6": "/proc/net/stat/ndisc_cache"}
OVERFLOW = "neighbor table overflow"


def read_neigh_stat(path):
    """entries (table-wide) and table_fulls (summed over CPUs) from a /proc/net/stat file."""
    with open(path) as f:
        lines = f.read().split("\n")
    header = lines[0].split()
    rows = [line.split() for line in lines[1:] if line.strip()]
    if not rows:
        return None
    col = dict((name, i) for i, name in enumerate(header))
    entries = int(rows[0][col["entries"]], 16)
    fulls = sum(int(r[col["table_fulls"]], 16) for r in rows) if "table_fulls" in col else None
    return {"entries": entries, "table_fulls": fulls}


def main():
    module = AnsibleModule(argument_spec=dict(gc_thresh3=dict(type="dict", default={})),
                           supports_check_mode=True)
    report = {}
    for family, path in STAT_FILES.items():
        if os.path.exists(path):
            stat = read_neigh_stat(path)
            stat["entries_source"] = path
        else:
            # /proc/net/stat/*_cache exists only in the initial network namespace: count this
            # namespace's entries with iproute2 instead (table_fulls is then unknown).
            rc, out, err = module.run_command(["ip", "-j", "-%s" % family[-1], "neigh", "show"])
            if rc != 0:
                module.fail_json(msg="cannot read the %s neighbour table: %s" % (family, err.strip()))
            stat = {"entries": len(json.loads(out or "[]")), "table_fulls": None, "entries_source": "ip neigh"}
        live_path = "/proc/sys/net/%s/neigh/default/gc_thresh3" % family
        thresh, source = None, None
        if os.path.exists(live_path):
            with open(live_path) as f:
                thresh, source = int(f.read().strip()), "live"
        elif module.params["gc_thresh3"].get(family) is not None:
            thresh, source = int(module.params["gc_thresh3"][family]), "configured"
        stat["gc_thresh3"] = thresh
        stat["gc_thresh3_source"] = source
        stat["usage"] = round(float(stat["entries"]) / thresh, 6) if thresh else None
        report[family] = stat

    count, source = None, None
    rc, out, _err = module.run_command(["dmesg", "--notime"])
    if rc == 0:
        count, source = out.count(OVERFLOW), "dmesg"
    else:
        rc, out, _err = module.run_command(["journalctl", "-k", "-b", "-o", "cat", "--no-pager", "-q"])
        if rc == 0 and out.strip():
            count, source = out.count(OVERFLOW), "journal"
    report["kernel_log_overflow_messages"] = count
    report["kernel_log_source"] = source or "unreadable here"
    module.exit_json(changed=False, ansible_facts={"kubescale_neigh": report})


if __name__ == "__main__":
    main()
