#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: validate_roles
short_description: The argument specs of several of this collection's roles, checked in one task before any runs
version_added: "0.5.0"
description:
  - Runs on the controller (an action; nothing reaches the node). For each role in O(roles), reads its
    C(meta/argument_specs.yml), takes the variables its O(entry_point) names from the host's variables, templates
    them and validates them with ansible-core's own C(ArgumentSpecValidator), as C(ansible.builtin.validate_argument_spec)
    does at the start of a role. Every role is checked; the task fails with each role's errors, word for word
    as ansible-core words them, under the role's name.
  - A class playbook runs it first and imports its roles with C(rolespec_validate=false). That costs one task per
    host for all the roles, where ansible-core prepends one validation task to each role. Also, a bad variable of
    the last role fails the host before the first role changes it.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  roles:
    description: The roles, by short name (V(local_ssd)) or FQCN (V(kubescale.tuning.local_ssd)).
    type: list
    elements: str
    required: true
  entry_point:
    description: The entry point whose spec applies (the role's C(tasks_from)).
    type: str
    default: main
extends_documentation_fragment:
  - kubescale.tuning.attributes
attributes:
  action:
    support: full
    description: Runs on the controller.
  check_mode:
    support: full
    details: Validates the same way; changes nothing in either mode.
  diff_mode:
    support: none
  platform:
    platforms: all
"""

EXAMPLES = r"""
- name: Check every role's variables against its argument spec, before any role changes the node
  kubescale.tuning.validate_roles:
    roles: [arp_sysctl, local_ssd, docker_overlay2, kubelet_pulls, image_preload]
  tags: [always]

- name: Apply arp_sysctl
  ansible.builtin.import_role:
    name: kubescale.tuning.arp_sysctl
    rolespec_validate: false
"""

RETURN = r"""
roles:
  description: The roles checked.
  returned: always
  type: list
  elements: str
argument_errors:
  description: Each role whose variables do not fit its spec, with ansible-core's error messages.
  returned: always
  type: dict
  sample: {"local_ssd": ["value of local_ssd_fstype must be one of: ext4, xfs, got: ntfs"]}
"""
