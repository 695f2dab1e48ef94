# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A role's rules across variables, evaluated on the controller: check_vars' whole job (its `rules`), and the first
step of the actions of modules that take them as `checks` (a role's first task that reaches the node checks its
variables in the same task, so the role pays no task per host for its checks).

Each rule is what one ansible.builtin.assert task was: its conditions are evaluated as assert evaluates them, its
message templated only when it fails. Rules run in order and the first that does not hold fails, so a later rule may
rely on an earlier one; a rule with `warn: true` that does not hold only warns.
"""

from __future__ import annotations

import typing as t

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.template import is_trusted_as_template, trust_as_template

from ansible_collections.kubescale.tuning.plugins.plugin_utils._by_hash import run_by_hash


def check_shape(rules, option):
    """Raise AnsibleActionFail unless rules is a non-empty list of {that, msg[, warn]}."""
    if not isinstance(rules, list) or not rules:
        raise AnsibleActionFail("%s: give a list of {that, msg} rules" % option)
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict) or "that" not in rule or "msg" not in rule:
            raise AnsibleActionFail("%s[%d]: each rule needs `that` (a condition or a list of them) and `msg`"
                                    % (option, i))
        if not isinstance(rule.get("warn", False), bool):
            raise AnsibleActionFail("%s[%d].warn: give true or false" % (option, i))


def all_hold(templar, rules):
    """True when every condition of every rule that is not a warning holds, asked as one expression: one Jinja
    compile per task and host for the lot, where each condition alone costs one (the common case: valid variables).
    The conditions are joined in order with `and`, so a later one is still evaluated only when the earlier ones hold,
    and each must be exactly true. False when one does not hold or raises, or when they cannot be joined (one not a
    trusted expression string); then evaluate() asks rule by rule, as before, for the failure and its message."""
    parts = []
    for rule in rules:
        if rule.get("warn", False):
            continue
        for condition in rule["that"] if isinstance(rule["that"], list) else [rule["that"]]:
            if not isinstance(condition, str) or not is_trusted_as_template(condition) \
                    or "{{" in condition or "{%" in condition:
                return False
            parts.append("(%s) is sameas true" % condition)
    if not parts:
        return True
    try:
        return templar.evaluate_conditional(conditional=trust_as_template(" and ".join(parts))) is True
    except Exception:  # the rule-by-rule pass raises it again, for the condition that raises it
        return False


def evaluate(templar, rules):
    """(failure, warnings): failure is None when every rule holds (or only warns), else the result keys of the
    first that does not - rule, assertion, checked, msg."""
    if all_hold(templar, rules):
        rules = [rule for rule in rules if rule.get("warn", False)]  # only the warnings are left to ask
    warnings = []
    for i, rule in enumerate(rules):
        that = rule["that"] if isinstance(rule["that"], list) else [rule["that"]]
        for condition in that:
            if not templar.evaluate_conditional(conditional=condition):
                msg = str(templar.template(rule["msg"])).strip()
                if rule.get("warn", False):
                    warnings.append(msg)
                    break
                return dict(failed=True, rule=i, assertion=condition, checked=i + 1, msg=msg), warnings
    return None, warnings


class RulesAction(ActionBase):
    """Keeps the rules option untemplated for evaluate(): conditions are evaluated like assert's `that`, and a
    message is templated only for a rule that fails (it may name values that exist only then)."""

    RULES = "checks"

    @classmethod
    def finalize_task_arg(cls, name: str, value: t.Any, templar: t.Any, context: t.Any) -> t.Any:
        if name == cls.RULES:
            return value
        return super().finalize_task_arg(name, value, templar, context)

    def check_rules(self, result, required=False):
        """Evaluate the task's rules into result (none given: nothing to check, unless required); True when the
        task may go on."""
        rules = self._task.args.get(self.RULES)
        if rules is None and not required:
            return True
        check_shape(rules, self.RULES)
        failure, warnings = evaluate(self._templar, rules)
        if warnings:
            result.setdefault("warnings", []).extend(warnings)
        if failure:
            result.update(failure, changed=False)
            return False
        return True

    def module_args(self):
        """The task's arguments without the rules: what the module is run with."""
        return {k: v for k, v in self._task.args.items() if k != self.RULES}

    @staticmethod
    def merge(result, out):
        """result updated with the module's answer, the rules' warnings before the module's own."""
        warnings = result.pop("warnings", [])
        result.update(out)
        if warnings:
            result["warnings"] = warnings + list(result.get("warnings") or [])
        return result


class CheckedModuleAction(RulesAction):
    """The action of a module that takes `checks`: the rules first, on the controller; the module only when they
    hold, without them. The files of its node_state (FILES_AT: the nested option, or node_state's own `files`) go by
    hash: a file's text is sent only to a node whose copy differs (plugin_utils/_by_hash.py)."""

    MODULE = ""
    TRANSFERS_FILES = False
    FILES_AT = ("node_state", "files")

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        if not self.check_rules(result):
            return result
        return self.merge(result, run_by_hash(self, self.MODULE, self.module_args(), self.FILES_AT, task_vars))
