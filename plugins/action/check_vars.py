# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for kubescale.tuning.check_vars: a role's rules across variables in one controller-side task.

Each rule is what one ansible.builtin.assert task was - its conditions are evaluated as assert evaluates them, and
its message is templated only when the rule fails - so a role pays one task per host for all its rules, not one
per rule. Rules run in order and the first that does not hold fails the task with its own message, as the first
failing assert task did: a later rule may rely on an earlier one (a variable checked to be a list, then used as one).
"""

from __future__ import annotations

import typing as t

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    """Evaluate every rule; fail with the messages of those that do not hold."""

    _requires_connection = False
    TRANSFERS_FILES = False

    @classmethod
    def finalize_task_arg(cls, name: str, value: t.Any, templar: t.Any, context: t.Any) -> t.Any:
        if name == "rules":
            # Conditions and messages stay untemplated here: a condition is evaluated like assert's `that`, and a
            # message is templated only for a rule that fails (it may name values that exist only then).
            return value
        return super().finalize_task_arg(name, value, templar, context)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        rules = self._task.args.get("rules")
        if not isinstance(rules, list) or not rules:
            raise AnsibleActionFail("rules: give a list of {that, msg} rules")
        for i, rule in enumerate(rules):
            if not isinstance(rule, dict) or "that" not in rule or "msg" not in rule:
                raise AnsibleActionFail("rules[%d]: each rule needs `that` (a condition or a list of them) and `msg`" % i)
        result["changed"] = False
        for i, rule in enumerate(rules):
            that = rule["that"] if isinstance(rule["that"], list) else [rule["that"]]
            for condition in that:
                if not self._templar.evaluate_conditional(conditional=condition):
                    result.update(failed=True, rule=i, assertion=condition, checked=i + 1,
                                  msg=str(self._templar.template(rule["msg"])).strip())
                    return result
        result["checked"] = len(rules)
        result["msg"] = "all %d rules hold" % len(rules)
        return result
