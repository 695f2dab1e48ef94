# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for kubescale.tuning.validate_roles: the argument specs of a class playbook's roles, checked in one
controller-side task per host before any of them runs (plugin_utils/_role_specs.py)."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.kubescale.tuning.plugins.plugin_utils._role_specs import validate


class ActionModule(ActionBase):
    """Validate every named role's variables against its spec; fail naming each role and its errors."""

    _requires_connection = False
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        roles = self._task.args.get("roles")
        entry_point = self._task.args.get("entry_point", "main")
        if not isinstance(roles, list) or not roles:
            raise AnsibleActionFail("roles: give a non-empty list of kubescale.tuning roles")
        if not isinstance(entry_point, str) or not entry_point:
            raise AnsibleActionFail("entry_point: give an entry point name, like main")
        errors = validate(self._loader, self._templar, roles, task_vars or {}, entry_point)
        result.update(changed=False, roles=[str(r) for r in roles], argument_errors=errors)
        if errors:
            result["failed"] = True
            result["msg"] = "Validation of arguments failed:\n%s" % "\n".join(
                "%s: %s" % (role, message) for role, messages in errors.items() for message in messages)
        else:
            result["msg"] = "the variables of all %d roles fit their argument specs" % len(roles)
        return result
