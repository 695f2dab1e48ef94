# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: apf_objects
short_description: The PriorityLevelConfiguration and FlowSchema that hold node agents to a share of the API server
version_added: "0.5.0"
description:
  - Both objects (flowcontrol.apiserver.k8s.io/v1) are named O(_input). The priority level is Limited with
    O(shares) nominal concurrency shares and a queue (O(queues), O(hand_size), O(queue_length)); the FlowSchema
    matches every request (resources in every namespace and cluster-wide, and non-resource URLs) of the O(agents)
    service accounts at O(precedence), one flow per user (ByUser), so one noisy agent waits behind its own queue.
  - Fails on settings the API server would refuse (see M(kubescale.tuning.apf_errors)).
author:
  - kubescale.tuning contributors (@kubescale)
positional: _input
options:
  _input:
    description: The objects' name.
    type: str
    required: true
  precedence:
    description: The FlowSchema's matchingPrecedence, 1..8999 (before the suggested service-accounts schema, 9000).
    type: int
    required: true
  shares:
    description: nominalConcurrencyShares, 1 or more.
    type: int
    required: true
  lendable:
    description: lendablePercent, 0..100, or null.
    type: int
  borrowing:
    description: borrowingLimitPercent, 0..100, or null (no limit).
    type: int
  queues:
    description: The number of queues.
    type: int
    required: true
  hand_size:
    description: The queues one flow is shuffle-sharded over.
    type: int
    required: true
  queue_length:
    description: queueLengthLimit.
    type: int
    required: true
  agents:
    description: The agents' service accounts, each C({name, namespace}) (name C(*) for all in the namespace).
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: The node agents' APF objects
  ansible.builtin.set_fact:
    apf: "{{ 'node-agents' | kubescale.tuning.apf_objects(precedence=1000, shares=10, lendable=0, borrowing=none,
             queues=16, hand_size=4, queue_length=50, agents=[{'name': 'fluentd', 'namespace': 'logging'}]) }}"
"""

RETURN = r"""
_value:
  description: The PriorityLevelConfiguration, then the FlowSchema.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.kubescale.tuning.plugins.plugin_utils._lazy import LazyModule

_apf = LazyModule("module_utils.kube.apf")  # imported at the first call, not with this file


def _ints(kw):
    out = dict(kw)
    for key in ("precedence", "shares", "lendable", "borrowing", "queues", "hand_size", "queue_length"):
        value = out.get(key)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            out[key] = int(value)
    return out


def apf_errors(name, prefix="", **kw):
    return _apf.problems(name, prefix=prefix, **_ints(kw))


def apf_objects(name, **kw):
    kw = _ints(kw)
    found = _apf.problems(name, **kw)
    if found:
        raise AnsibleFilterError("apf_objects: " + "; ".join(found))
    return _apf.objects(name, **kw)


class FilterModule(object):
    def filters(self):
        return {"apf_objects": apf_objects, "apf_errors": apf_errors}
