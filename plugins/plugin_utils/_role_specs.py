# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Several of this collection's roles' argument specs, checked on the controller in one task per host: what
ansible-core's validate_argument_spec does at the start of each role (one task per role and host), for all of a
class playbook's roles at once, before any of them changes the node.

The checking is ansible-core's own: the variables the spec names are taken from the host's variables and templated,
then ansible.module_utils.common.arg_spec.ArgumentSpecValidator validates them with validate_role_argument_spec, as
the validate_argument_spec action does; its error messages are kept word for word, under the role's name.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

COLLECTION = "kubescale.tuning."
ROLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")


def role_name(name):
    """A role of this collection, by its short name or FQCN; AnsibleActionFail for anything else."""
    short = name[len(COLLECTION):] if isinstance(name, str) and name.startswith(COLLECTION) else name
    if not isinstance(short, str) or not short or os.sep in short or short.startswith(".") \
            or not os.path.isdir(os.path.join(ROLES_DIR, short)):
        raise AnsibleActionFail("roles: %r is not a role of kubescale.tuning" % (name,))
    return short


def spec_options(loader, role, entry_point="main"):
    """The options of the role's argument spec for entry_point (meta/argument_specs.yml, read with ansible-core's
    DataLoader, which keeps what it has read); AnsibleActionFail when the role has no spec for it."""
    for ext in ("yml", "yaml"):
        path = os.path.join(ROLES_DIR, role, "meta", "argument_specs." + ext)
        if os.path.exists(path):
            specs = (loader.load_from_file(path) or {}).get("argument_specs") or {}
            if entry_point in specs:
                return specs[entry_point].get("options") or {}
            break
    raise AnsibleActionFail("roles: role %s has no argument spec for entry point %r" % (role, entry_point))


def role_errors(templar, options, task_vars):
    """ArgumentSpecValidator's error messages for the host's values of the options (templated), as
    validate_argument_spec gives them; [] when they are valid."""
    values = templar.template(dict((name, task_vars[name]) for name in options if name in task_vars))
    return list(ArgumentSpecValidator(options).validate(values, validate_role_argument_spec=True).error_messages)


def validate(loader, templar, roles, task_vars, entry_point="main"):
    """{role: [error messages]} for every role in roles whose variables do not fit its spec (all roles checked)."""
    errors = {}
    for name in roles:
        role = role_name(name)
        messages = role_errors(templar, spec_options(loader, role, entry_point), task_vars)
        if messages:
            errors[role] = messages
    return errors
