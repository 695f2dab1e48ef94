# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: from_toml
short_description: Read TOML text into data
version_added: "0.2.0"
description:
  - Parses TOML (like C(/etc/containerd/config.toml)) with the same reader kubescale.tuning.config_merge uses.
author:
  - kubescale.tuning contributors (@kubescale)
positional: _input
options:
  _input:
    description: TOML text.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Read containerd's config
  ansible.builtin.debug:
    msg: "{{ (lookup('ansible.builtin.file', 'config.toml') | kubescale.tuning.from_toml).version }}"
"""

RETURN = r"""
_value:
  description: The data.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.kubescale.tuning.plugins.plugin_utils._lazy import LazyModule

_toml = LazyModule("module_utils.node.toml")  # imported at the first call, not with this file


def from_toml(text):
    try:
        return _toml.loads(str(text))
    except _toml.TomlError as exc:
        raise AnsibleFilterError("from_toml: %s" % exc) from exc


class FilterModule(object):
    def filters(self):
        return {"from_toml": from_toml}
