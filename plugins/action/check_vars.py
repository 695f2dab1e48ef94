# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for kubescale.tuning.check_vars: a role's rules across variables in one controller-side task.

Each rule is what one ansible.builtin.assert task was - its conditions are evaluated as assert evaluates them, and
its message is templated only when the rule fails - so a role pays one task per host for all its rules, not one
per rule. Rules run in order and the first that does not hold fails the task with its own message, as the first
failing assert task did: a later rule may rely on an earlier one (a variable checked to be a list, then used as one).
A rule with `warn: true` that does not hold only warns. The evaluation is plugin_utils/_rules.py's, shared with the
actions of the modules that take the same `rules`.
"""

from __future__ import annotations

from ansible_collections.kubescale.tuning.plugins.plugin_utils._rules import RulesAction


class ActionModule(RulesAction):
    """Evaluate every rule; fail with the message of the first that does not hold."""

    _requires_connection = False
    TRANSFERS_FILES = False
    RULES = "rules"

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        result["changed"] = False
        if not self.check_rules(result, required=True):
            return result
        rules = self._task.args["rules"]
        result["checked"] = len(rules)
        result["msg"] = "all %d rules hold" % len(rules)
        return result
