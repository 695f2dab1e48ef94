# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: role_template
short_description: A role's template file rendered with the task's variables, without copying them
version_added: "0.5.0"
description:
  - Finds each term like M(ansible.builtin.template)'s lookup does (the role's C(templates) directory first) and
    renders it with the variables of the task that asks, as that lookup does with its defaults (C(trim_blocks),
    trailing newlines kept, backslashes not escaped).
  - ansible.builtin.template's lookup deep-copies all the task's variables (every group and role variable of the
    host) for every file it renders. In a role's arguments, templated per task and host, that copy cost every worker
    that rendered one (bench/worker_cpu.py). This lookup renders with the variables as they are, which a template
    cannot change.
  - The template variables that lookup adds (C(ansible_managed), C(template_path), ...) are not defined here.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  _terms:
    description: Template file names, found under the role's C(templates) directory (or paths).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: A unit file's text, rendered from the role's templates/
  kubescale.tuning.node_state:
    files:
      - path: /etc/systemd/system/kubescale-local-ssd.service
        content: "{{ lookup('kubescale.tuning.role_template', 'kubescale-local-ssd.service.j2') }}"
"""

RETURN = r"""
_raw:
  description: Each file's rendered text.
  type: list
  elements: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible.template import trust_as_template


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        out = []
        for term in terms:
            path = self.find_file_in_search_path(variables, "templates", term)
            if not path:
                raise AnsibleLookupError("role_template: %s is not in the role's templates directory" % term)
            text = trust_as_template(self._loader.get_text_file_contents(path))
            out.append(self._templar.template(text, preserve_trailing_newlines=True, escape_backslashes=False,
                                              overrides=dict(trim_blocks=True)))
        return out
