# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """The `checks` option of the modules whose action checks a role's variables first (kubescale.tuning.checks)."""

    DOCUMENTATION = r"""
options:
  checks:
    description:
      - A role's rules across variables, evaluated by this module's action on the controller before the module runs,
        exactly as M(kubescale.tuning.check_vars) evaluates them; the first that does not hold fails the task with its
        message and the node is not asked. They never reach the node.
      - So a role's first task that reaches the node also checks its variables, at no task of its own. The role keeps
        the same rules (a YAML anchor) in a M(kubescale.tuning.check_vars) task tagged C(never) and C(preflight), which
        runs only for C(--tags preflight).
    type: list
    elements: dict
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
        description: When the rule does not hold, warn with O(checks[].msg) and go on, instead of failing.
        type: bool
        default: false
"""
