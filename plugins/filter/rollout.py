# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: rollout_batch
short_description: A play's serial (batch sizes) checked, failing with the variable's name when it is not one
version_added: "0.4.0"
description:
  - A batch size is a whole number of hosts, 1 or more, or a percentage of the play's hosts ("10%", above 0 and at
    most 100); a list of them sizes the batches in turn (the last repeats). The value is returned as it was given.
  - Anything else fails the play before any task runs, naming the variable, where ansible-core's own check would
    stop with a Python traceback.
author:
  - kubescale.tuning contributors (@kubescale)
positional: _input, name
options:
  _input:
    description: The batch size, or a list of them.
    type: raw
    required: true
  name:
    description: The variable it came from, for the message.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Tune the CPU workers
  hosts: kube_node_cpu
  serial: "{{ kubescale_serial_kube_node_cpu | default([1, '10%', '25%']) | kubescale.tuning.rollout_batch('kubescale_serial_kube_node_cpu') }}"
"""

RETURN = r"""
_value:
  description: The batch size or sizes, unchanged.
  type: raw
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.kubescale.tuning.plugins.plugin_utils._lazy import LazyModule

_rollout = LazyModule("module_utils.fleet.rollout")  # imported at the first call, not with this file


def rollout_batch(value, name):
    """value, when it is a batch size or a non-empty list of them; AnsibleFilterError naming `name` otherwise."""
    problem = _rollout.batch_problem(value)
    if problem:
        raise AnsibleFilterError("%s: %s. Nothing was changed." % (name, problem))
    return value


def rollout_percent(value, name):
    """value, when it is a percentage of failed hosts from 0 to 100; AnsibleFilterError naming `name` otherwise."""
    problem = _rollout.percent_problem(value)
    if problem:
        raise AnsibleFilterError("%s: %s. Nothing was changed." % (name, problem))
    return value


class FilterModule(object):
    def filters(self):
        return {"rollout_batch": rollout_batch, "rollout_percent": rollout_percent}
