#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: etcd_cluster
short_description: Read an etcd cluster's health and quorum, wait for a member to catch up, or re-add a wiped member
version_added: "0.4.0"
description:
  - Talks to etcd v3 with C(etcdctl) (one call per question, JSON output), never through a shell.
  - O(state=observed) reads the member list from the first of O(endpoints) that answers, asks every member for its
    health and status, and reports quorum as data, including whether member O(name) can be stopped without
    losing quorum. It also reports alarms (C(NOSPACE)) and the database size against O(quota_backend_bytes).
    Never changes anything.
  - O(state=caught_up) waits until member O(name) answers healthy and its revision reached the leader's
    revision seen when the wait began; fails after O(timeout) seconds. Never changes anything.
  - O(state=rejoined) brings back a member whose data is gone (the local SSD was wiped) - removes its stale
    entry and adds it again with O(peer_urls) through a healthy peer, and returns the C(ETCD_INITIAL_CLUSTER)
    it must start with (C(initial-cluster-state=existing)). Nothing is done when the member answers healthy.
    Refused, before any change, when the other members' healthy votes are fewer than the quorum.
    One rejoin at a time per member on the node - it waits up to O(timeout) seconds for a module of an earlier run
    (its controller gone) still re-adding the member, then surveys. A step such a run already took counts as done -
    the stale entry already removed, or the member already listed, unstarted, at O(peer_urls).
  - O(state=nospace_cleared) disarms a C(NOSPACE) alarm once the largest member database leaves 5% of
    O(quota_backend_bytes) free, and at least 8 MiB (a few of the largest writes etcd takes; the quota was raised,
    or the database compacted and defragmented), so writes go on.
    etcd keeps refusing writes until the alarm is disarmed, whatever the new quota. Nothing is done while the database
    is still at the quota (the next writes would raise it again), and alarms other than C(NOSPACE) (C(CORRUPT)) are
    left for a person.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  state:
    description: What to do.
    type: str
    default: observed
    choices: [observed, caught_up, rejoined, nospace_cleared]
  endpoints:
    description: Client URLs to reach the cluster; the first that answers gives the member list.
    type: list
    elements: str
    required: true
  name:
    description: This member's name (C(ETCD_NAME)). Required for O(state=caught_up) and O(state=rejoined).
    type: str
    default: ""
  peer_urls:
    description: This member's peer URLs (C(ETCD_INITIAL_ADVERTISE_PEER_URLS)). Required for O(state=rejoined).
    type: list
    elements: str
    default: []
  cacert:
    description: CA bundle to verify the members' client certificates (C(etcdctl --cacert)).
    type: path
  cert:
    description: Client certificate (C(etcdctl --cert)).
    type: path
  key:
    description: Client key (C(etcdctl --key)).
    type: path
  quota_backend_bytes:
    description: The quota the members run with, in bytes, to report the database size against it (0 = etcd's 2 GiB).
    type: int
    default: 0
  timeout:
    description:
      - Seconds O(state=caught_up) waits, and O(state=rejoined) waits for an earlier run's rejoin of the member.
    type: int
    default: 120
  etcdctl:
    description: The etcdctl binary.
    type: path
    default: etcdctl
extends_documentation_fragment:
  - kubescale.tuning.attributes
attributes:
  check_mode:
    support: full
    details: >-
      O(state=rejoined) reports whether it would remove and add the member, O(state=nospace_cleared) whether it would
      disarm; nothing else changes anything.
  diff_mode:
    support: none
  platform:
    platforms: posix
requirements:
  - etcdctl (API v3) on the node.
"""

EXAMPLES = r"""
- name: May this member be stopped?
  kubescale.tuning.etcd_cluster:
    endpoints: [http://127.0.0.1:2379]
    name: etcd-1
  register: etcd

- name: Bring back a member whose SSD was wiped
  kubescale.tuning.etcd_cluster:
    state: rejoined
    endpoints: [https://10.0.0.5:2379, https://10.0.0.6:2379]
    name: etcd-1
    peer_urls: [https://10.0.0.4:2380]
    cacert: /etc/etcd/ca.crt
    cert: /etc/etcd/client.crt
    key: /etc/etcd/client.key
  register: rejoin

- name: Let writes go on once the raised quota is above the database (NOSPACE disarmed)
  kubescale.tuning.etcd_cluster:
    state: nospace_cleared
    endpoints: [http://127.0.0.1:2379]
    quota_backend_bytes: 8589934592
"""

RETURN = r"""
members:
  description: Every member with C(id) (hex), C(name) (empty until started), C(peer_urls), C(client_urls), C(healthy), C(revision), C(db_size).
  returned: always
  type: list
  elements: dict
voting:
  description: Voting members.
  returned: always
  type: int
healthy:
  description: Voting members that answered healthy.
  returned: always
  type: int
quorum:
  description: Votes the cluster needs.
  returned: always
  type: int
has_quorum:
  description: Whether the healthy voting members reach the quorum.
  returned: always
  type: bool
all_healthy:
  description: Whether every voting member answered healthy.
  returned: always
  type: bool
can_stop_member:
  description: Whether the cluster keeps quorum with member O(name) stopped.
  returned: always
  type: bool
member_present:
  description: Whether the cluster lists member O(name) (or a nameless member at O(peer_urls)).
  returned: always
  type: bool
leader_revision:
  description: The leader's revision (null when no single leader answered).
  returned: always
  type: int
db_size:
  description: The largest member database, in bytes.
  returned: always
  type: int
quota_bytes:
  description: The quota the sizes were measured against.
  returned: always
  type: int
db_quota_ratio:
  description: RV(db_size) / RV(quota_bytes).
  returned: always
  type: float
alarms:
  description: Raised alarms, each C(member_id) and C(alarm) (C(NOSPACE) means etcd refuses writes).
  returned: always
  type: list
  elements: dict
initial_cluster:
  description: For O(state=rejoined), the C(ETCD_INITIAL_CLUSTER) the member starts with.
  returned: when state is rejoined
  type: str
removed:
  description: For O(state=rejoined), the stale member ID removed (null when there was none).
  returned: when state is rejoined
  type: str
readded:
  description: For O(state=rejoined), whether the member was (or in check mode would be) added again.
  returned: when state is rejoined
  type: bool
disarmed:
  description: For O(state=nospace_cleared), whether NOSPACE was (or in check mode would be) disarmed.
  returned: when state is nospace_cleared
  type: bool
msg:
  description: For O(state=nospace_cleared), why the alarms were or were not disarmed.
  returned: when state is nospace_cleared
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.etcd.cluster import (
    DEFAULT_QUOTA,
    Etcdctl,
    EtcdError,
    RejoinError,
    initial_cluster,
    nospace_verdict,
    plan_rejoin,
    rejoin,
    survey,
    wait_caught_up,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.node.txlock import LockTimeout, hold, lock_path


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", default="observed", choices=["observed", "caught_up", "rejoined", "nospace_cleared"]),
            endpoints=dict(type="list", elements="str", required=True),
            name=dict(type="str", default=""),
            peer_urls=dict(type="list", elements="str", default=[]),
            cacert=dict(type="path"),
            cert=dict(type="path"),
            key=dict(type="path"),
            quota_backend_bytes=dict(type="int", default=0),
            timeout=dict(type="int", default=120),
            etcdctl=dict(type="path", default="etcdctl"),
        ),
        required_if=[("state", "caught_up", ["name"]), ("state", "rejoined", ["name", "peer_urls"])],
        required_together=[("cert", "key")],
        supports_check_mode=True,
    )
    p = module.params
    for url in p["endpoints"] + p["peer_urls"]:
        if not (url.startswith("http://") or url.startswith("https://")):
            module.fail_json(msg="endpoints/peer_urls: %r is not an http:// or https:// URL" % url)
    if not p["endpoints"]:
        module.fail_json(msg="endpoints: give at least one client URL")
    if p["quota_backend_bytes"] < 0 or p["timeout"] < 1:
        module.fail_json(msg="quota_backend_bytes must be 0 or more and timeout 1 or more")
    for name in ("cacert", "cert", "key"):
        if p[name] and not module.check_mode and not os.path.isfile(p[name]):
            module.fail_json(msg="%s: %s does not exist" % (name, p[name]))
    binary = module.get_bin_path(p["etcdctl"], required=True) if "/" not in p["etcdctl"] else p["etcdctl"]

    def run(argv):
        return module.run_command(argv)

    ctl = Etcdctl(run, binary, p["endpoints"], p["cacert"], p["cert"], p["key"])
    quota = p["quota_backend_bytes"] or DEFAULT_QUOTA

    def look():
        info = survey(ctl, p["name"], peer_urls=p["peer_urls"])
        try:
            info["alarms"] = ctl.alarms([m for r in info["members"] if r["healthy"] for m in r["client_urls"]][:1]
                                        or None)
        except EtcdError:
            info["alarms"] = []
        info["quota_bytes"] = quota
        info["db_quota_ratio"] = round(float(info["db_size"]) / quota, 4)
        return info

    held = []  # the rejoin's lock, held until the module exits
    if p["state"] == "rejoined" and not module.check_mode:
        # A run whose controller died may still be re-adding this member on the node: wait for it, then survey.
        try:
            held.append(hold(lock_path("etcd-rejoin", p["name"]), p["timeout"]))
        except LockTimeout as exc:
            module.fail_json(msg="name: %s; nothing was changed" % exc)

    try:
        info = look()
    except EtcdError as exc:
        module.fail_json(msg="endpoints: %s" % exc)

    if p["state"] == "observed":
        module.exit_json(changed=False, **info)

    if p["state"] == "caught_up":
        waited = wait_caught_up(look, info, p["timeout"])
        if waited.done:
            module.exit_json(changed=False, target_revision=waited.target, **waited.info)
        me = waited.info["member"]
        module.fail_json(
            msg="member %s did not catch up within %ds: healthy=%s, revision %s, leader revision %s (%s)"
            % (p["name"], p["timeout"], bool(me and me["healthy"]), me and me["revision"], waited.target,
               me and me["error"]), **waited.info)

    if p["state"] == "nospace_cleared":
        disarm, why = nospace_verdict(info["alarms"], info["db_size"], quota)
        if not disarm or module.check_mode:
            module.exit_json(changed=disarm, disarmed=disarm, msg=why, **info)
        healthy_eps = [u for r in info["members"] if r["healthy"] for u in r["client_urls"]]
        try:
            ctl.alarm_disarm(healthy_eps or None)
            info["alarms"] = ctl.alarms(healthy_eps or None)
        except EtcdError as exc:
            module.fail_json(msg="endpoints: %s" % exc, **info)
        module.exit_json(changed=True, disarmed=True, msg=why, **info)

    # rejoined: plan from the survey, then act
    plan = plan_rejoin(info, p["name"], p["peer_urls"])
    if plan.action == "none":
        module.exit_json(changed=False, removed=None, readded=False, msg=plan.message,
                         initial_cluster=initial_cluster(list(info["members"]), p["name"], p["peer_urls"]), **info)
    if plan.action == "refused":
        module.fail_json(msg=plan.message, **info)
    if module.check_mode:
        module.exit_json(changed=True, removed=plan.remove_id, readded=True, initial_cluster=None, **info)
    try:
        info["members"] = rejoin(ctl, plan, p["name"], p["peer_urls"])
    except RejoinError as exc:
        module.fail_json(msg=str(exc), removed=exc.removed, **info)
    module.exit_json(changed=True, removed=plan.remove_id, readded=True,
                     initial_cluster=initial_cluster(info["members"], p["name"], p["peer_urls"]), **info)


if __name__ == "__main__":
    main()
