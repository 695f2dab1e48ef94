#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sysctl_profile
short_description: Set many sysctls in one call, ordered, persisted, and checked against boot precedence
version_added: "0.1.0"
description:
  - Sets a whole tuning (a dict of sysctl keys) in one module execution.
  - Validates every key, value and ordering rule before changing anything.
  - Applies live values in an order that keeps each rule true at every step (raising
    C(gc_thresh3) before C(gc_thresh2) before C(gc_thresh1), lowering the other way round),
    reads each one back, and rolls back what it wrote if a later key fails.
  - Persists the profile atomically into one file under a C(sysctl.d) directory and resolves
    precedence the way C(systemd-sysctl) does (C(/etc), C(/run), C(/usr/local/lib), C(/usr/lib),
    C(/lib); a file of the same name higher up masks lower ones; files apply in lexical order, so a
    later file wins), reporting per key the file that wins at boot. Fails when another file would
    override a value of the profile with a different one.
  - Keys such as C(net.ipv4.neigh.default.gc_thresh1) exist only in the initial network
    namespace; with O(apply=auto) they are persisted only where this namespace lacks them or
    C(/proc/sys) is read-only (containers, image bakes), and the result says so per key.
  - With O(fact), the fact recorded is O(fact.data) with C(persist_only) (RV(persist_only)) added; not with
    O(state=observed).
author:
  - kubescale.tuning contributors (@kubescale)
options:
  settings:
    description:
      - Sysctl key to value. Keys in dotted (C(net.ipv4.neigh.default.gc_thresh1)) or slash form.
      - Integer keys take integers (or strings of digits); the C(gc_thresh) keys must lie in 0 to 2^31-1.
    type: dict
    required: true
  file:
    description:
      - The profile file, directly inside one of C(/etc/sysctl.d), C(/run/sysctl.d),
        C(/usr/local/lib/sysctl.d), C(/usr/lib/sysctl.d), C(/lib/sysctl.d), named C(*.conf).
      - The module owns this file, which holds exactly the profile's keys.
    type: path
    required: true
  apply:
    description:
      - C(live) sets the running kernel and persists; fails when a key cannot be set live here.
      - C(persist) writes the file only.
      - C(auto) sets live where this namespace allows it and persists only elsewhere, saying so.
    type: str
    choices: [auto, live, persist]
    default: auto
  rules:
    description:
      - Extra ordering rules, on top of the built-in
        C(gc_thresh1 <= gc_thresh2 <= gc_thresh3) for ipv4 and ipv6.
      - Each rule holds between adjacent keys of its list, in the final state and at every live step.
    type: list
    elements: dict
    default: []
    suboptions:
      keys:
        description: Integer sysctl keys, at least two.
        type: list
        elements: str
        required: true
      relation:
        description: How each key relates to the next one.
        type: str
        choices: ['<=', '<', '>=', '>']
        default: '<='
      name:
        description: A name for error messages.
        type: str
  state:
    description:
      - C(present) writes the profile; C(absent) removes the listed keys from the file (and the file when
        it is left empty). Live values are left as they are on C(absent).
      - C(observed) changes nothing and fails on nothing but bad input; it returns RV(observed) per key (wanted,
        live, persisted in O(file), value at boot and the file that wins), for audits. O(apply) and O(rules) are
        ignored.
    type: str
    choices: [present, absent, observed]
    default: present
extends_documentation_fragment:
  - kubescale.tuning.attributes
  - kubescale.tuning.checks
  - kubescale.tuning.fact
attributes:
  action:
    support: full
    description: An action plugin evaluates O(checks) on the controller first.
  check_mode:
    support: full
    details: Predicts the real run exactly, live order included.
  diff_mode:
    support: full
    details: Shows the file and, separately, the live values that change.
  platform:
    platforms: linux
notes:
  - Uses the standard library only; no C(sysctl) command is run.
seealso:
  - module: ansible.posix.sysctl
"""

EXAMPLES = r"""
- name: Size the ARP/ND caches for thousands of nodes
  kubescale.tuning.sysctl_profile:
    file: /etc/sysctl.d/90-kubescale-arp.conf
    settings:
      net.ipv4.neigh.default.gc_thresh1: 80000
      net.ipv4.neigh.default.gc_thresh2: 90000
      net.ipv4.neigh.default.gc_thresh3: 100000
      net.ipv6.neigh.default.gc_thresh1: 80000
      net.ipv6.neigh.default.gc_thresh2: 90000
      net.ipv6.neigh.default.gc_thresh3: 100000

- name: Persist only (image bake), with an extra ordering rule
  kubescale.tuning.sysctl_profile:
    file: /etc/sysctl.d/91-kubescale-conntrack.conf
    apply: persist
    settings:
      net.netfilter.nf_conntrack_max: 1048576
      net.netfilter.nf_conntrack_buckets: 262144
    rules:
      - keys: [net.netfilter.nf_conntrack_buckets, net.netfilter.nf_conntrack_max]
        relation: '<='

- name: Drop a key from the profile
  kubescale.tuning.sysctl_profile:
    file: /etc/sysctl.d/90-kubescale-arp.conf
    state: absent
    settings:
      net.ipv6.neigh.default.gc_thresh1: 0
"""

RETURN = r"""
keys:
  description: Per key, what was found and what was done.
  returned: always
  type: dict
  contains:
    before:
      description: Live value before the run; null where the key is not visible here.
      type: str
    after:
      description: Live value after the run (predicted in check mode).
      type: str
    persisted:
      description: Value in the profile file after the run; null on O(state=absent).
      type: str
    winning_file:
      description: The sysctl.d file whose value applies at boot.
      type: str
    drift:
      description: Before the run, the live value differed from what boot would set; null when unknown.
      type: bool
    live_applied:
      description: The live value was (or in check mode would be) written.
      type: bool
    live_skipped:
      description: Why the key was not set live (V(apply=persist), absent from this namespace, read-only).
      type: str
  sample:
    net.ipv4.neigh.default.gc_thresh3:
      before: "1024"
      after: "100000"
      persisted: "100000"
      winning_file: /etc/sysctl.d/90-kubescale-arp.conf
      drift: false
      live_applied: true
      live_skipped: null
observed:
  description: With O(state=observed), per key C(wanted), C(live) (null where not visible), C(live_status),
    C(persisted) (its value in O(file), null when absent there), C(boot) and C(winning_file) (what systemd-sysctl
    would set at boot, and from which file).
  returned: when state is observed
  type: dict
  sample:
    net.ipv4.neigh.default.gc_thresh3: {wanted: "100000", live: null, live_status: "absent in this network namespace",
                                        persisted: "100000", boot: "4096", winning_file: /etc/sysctl.d/99-zz.conf}
file:
  description: The profile file.
  returned: always
  type: str
file_changed:
  description: The profile file was (or would be) rewritten.
  returned: always
  type: bool
live_order:
  description: The order of the live writes.
  returned: always
  type: list
  elements: str
  sample: [net.ipv4.neigh.default.gc_thresh3, net.ipv4.neigh.default.gc_thresh2]
persist_only:
  description: Keys persisted without a live write.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.node.checks import CHECKS_ARGUMENT_SPEC
from ansible_collections.kubescale.tuning.plugins.module_utils.node.state import (
    FACT_ARGUMENT_SPEC,
    NodeState,
    NodeStateError,
    render_fact,
    validate,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.node.sysctl import (
    Host,
    SysctlError,
    observe_profile,
    plan_profile,
    write_profile,
)


def main():
    argument_spec = dict(
        settings=dict(type="dict", required=True),
        file=dict(type="path", required=True),
        apply=dict(type="str", default="auto", choices=["auto", "live", "persist"]),
        rules=dict(type="list", elements="dict", default=[], options=dict(
            keys=dict(type="list", elements="str", required=True, no_log=False),
            relation=dict(type="str", default="<=", choices=["<=", "<", ">=", ">"]),
            name=dict(type="str"),
        )),
        state=dict(type="str", default="present", choices=["present", "absent", "observed"]),
        fact=FACT_ARGUMENT_SPEC,
        checks=CHECKS_ARGUMENT_SPEC,
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    p = module.params
    if p["state"] == "observed":
        try:
            seen = observe_profile(Host("/"), p["settings"], p["file"])
        except SysctlError as exc:
            module.fail_json(msg=str(exc))
        module.exit_json(changed=False, observed=seen["keys"], file=seen["file"], file_present=seen["file_present"])
    fact = None
    if p["fact"]:
        try:
            fact = validate(dict(fact=p["fact"]))
        except NodeStateError as exc:
            module.fail_json(msg=str(exc))
    try:
        plan = plan_profile(Host("/"), p["settings"], p["file"], p["apply"], p["rules"], p["state"])
        if not module.check_mode:
            write_profile(Host("/"), plan)
    except SysctlError as exc:
        module.fail_json(msg=str(exc))
    changed, result, diff = plan.changed, plan.result(), plan.diff()
    if result["persist_only"] and p["apply"] == "auto":
        reasons = sorted(set(result["keys"][k]["live_skipped"] for k in result["persist_only"]))
        result["msg"] = "persisted only (applies at boot): %s (%s)" % (
            ", ".join(result["persist_only"]), "; ".join(reasons))
    if fact:
        fact["fact"]["text"] = render_fact(dict(p["fact"]["data"], persist_only=result["persist_only"]))
        recorder = NodeState(fact, systemd=None, check_mode=module.check_mode, want_diff=module._diff)
        try:
            recorder.fact()
        except NodeStateError as exc:
            module.fail_json(msg=str(exc), **result)
        changed = changed or bool(recorder.changed_paths)
        if recorder.diffs:
            diff = list(diff) + recorder.diffs
    if module._diff:
        result["diff"] = diff
    module.exit_json(changed=changed, **result)


if __name__ == "__main__":
    main()
