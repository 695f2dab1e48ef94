# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: dns_spread_plan
short_description: The pod anti-affinity that spreads a DNS Deployment over hosts, required or preferred by the nodes
version_added: "0.5.0"
description:
  - From the live Deployment and the live Nodes, counts the nodes its pods may be scheduled on (not cordoned, the pod
    template's nodeSelector and required node affinity matched, every NoSchedule and NoExecute taint tolerated).
  - With O(mode=auto) the rule on C(kubernetes.io/hostname) is required when the replicas fit one per node, and
    preferred (O(weight)) when they do not, so no replica is left Pending on a small cluster.
  - The selector is the Deployment's own C(spec.selector.matchLabels); one with matchExpressions fails.
  - Returns the strategic merge patch of C(spec.template.spec.affinity) (and C(topologySpreadConstraints) with
    O(topology_spread)). Every other affinity term and constraint is kept as it was; the rule moves between the
    required and preferred lists when the count changes.
author:
  - kubescale.tuning contributors (@kubescale)
positional: _input, nodes
options:
  _input:
    description: The Deployment (as kubernetes.core.k8s_info returns it).
    type: dict
    required: true
  nodes:
    description: The cluster's Nodes.
    type: list
    elements: dict
    required: true
  mode:
    description: V(auto), V(required) or V(preferred).
    type: str
    default: auto
  weight:
    description: The preferred rule's weight, 1..100.
    type: int
    default: 100
  topology_spread:
    description:
      - None, or C({topology_key, max_skew, when_unsatisfiable}) for a topology spread constraint too.
      - With C(enabled) false it adds none, so a role can pass its settings whole.
    type: dict
  replicas:
    description: The replica count to judge by (default the Deployment's).
    type: int
"""

EXAMPLES = r"""
- name: What the DNS Deployment needs
  ansible.builtin.set_fact:
    plan: "{{ deployment | kubescale.tuning.dns_spread_plan(nodes, mode='auto', weight=100) }}"
"""

RETURN = r"""
_value:
  description: C({rule, replicas, schedulable, selector, patch}).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.kubescale.tuning.plugins.plugin_utils._lazy import LazyModule

_spread = LazyModule("module_utils._dns_spread")  # imported at the first call, not with this file


def dns_spread_plan(deployment, nodes, mode="auto", weight=100, topology_spread=None, replicas=None):
    try:
        return _spread.plan(deployment, nodes or [], mode=mode, weight=int(weight),
                            topology_spread=topology_spread or None,
                            replicas=None if replicas in (None, "") else int(replicas))
    except (_spread.SpreadError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("dns_spread_plan: %s" % exc) from exc


def dns_spread_pdb(deployment, name, max_unavailable=1):
    return _spread.pdb(deployment, name, max_unavailable)


class FilterModule(object):
    def filters(self):
        return {"dns_spread_plan": dns_spread_plan, "dns_spread_pdb": dns_spread_pdb}
