#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: check_vars
short_description: A role's rules across variables, each with its own message, in one task
version_added: "0.4.0"
description:
  - Runs on the controller (an action; nothing reaches the node). Each rule is what one C(ansible.builtin.assert)
    task was - its O(rules[].that) conditions are evaluated as C(assert) evaluates them, in order - and its
    O(rules[].msg) is templated only when the rule fails, so a message may name values that exist only then.
  - Rules run in order; the first that does not hold fails the task with its message, as the first failing C(assert)
    task did, so a later rule may rely on an earlier one (a variable checked to be a list, then used as one). A rule
    with O(rules[].warn=true) that does not hold only warns.
  - Types, choices and defaults belong in the role's C(meta/argument_specs.yml); these rules are what a spec cannot
    say (formats, ranges, rules across variables). One task per host for all of a role's rules, where one
    C(assert) per rule cost the controller a task per rule per host.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  rules:
    description: The rules.
    type: list
    elements: dict
    required: true
    suboptions:
      that:
        description: A condition, or a list of conditions that must all hold (like C(assert)'s C(that)).
        type: raw
        required: true
      msg:
        description: What to say when the rule does not hold; name the variable and what is allowed.
        type: str
        required: true
      warn:
        description:
          - When the rule does not hold, warn with O(rules[].msg) and go on, instead of failing - a note to the
            operator (which default applies, what this node lacks) at no task of its own. A warning shown by many
            hosts alike is printed once.
        type: bool
        default: false
extends_documentation_fragment:
  - kubescale.tuning.attributes
attributes:
  action:
    support: full
    description: Runs on the controller.
  check_mode:
    support: full
    details: Evaluates the same rules.
  diff_mode:
    support: none
  platform:
    platforms: all
"""

EXAMPLES = r"""
- name: Check arp_sysctl variables
  kubescale.tuning.check_vars:
    rules:
      - that:
          - arp_sysctl_gc_thresh1 | int <= arp_sysctl_gc_thresh2 | int
          - arp_sysctl_gc_thresh2 | int <= arp_sysctl_gc_thresh3 | int
        msg: >-
          arp_sysctl_gc_thresh1 ({{ arp_sysctl_gc_thresh1 }}) <= arp_sysctl_gc_thresh2 ({{ arp_sysctl_gc_thresh2 }})
          <= arp_sysctl_gc_thresh3 ({{ arp_sysctl_gc_thresh3 }}) is required
      - that: arp_sysctl_file is match('^/etc/sysctl\.d/')
        msg: "arp_sysctl_file ({{ arp_sysctl_file }}) must be in /etc/sysctl.d"
"""

RETURN = r"""
checked:
  description: How many rules were evaluated.
  returned: always
  type: int
rule:
  description: The index of the rule that did not hold.
  returned: when a rule fails
  type: int
assertion:
  description: Its condition that was false.
  returned: when a rule fails
  type: str
"""
