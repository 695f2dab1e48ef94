# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """The `fact` option of the modules that record what a role applied in the same call (kubescale.tuning.fact)."""

    DOCUMENTATION = r"""
options:
  fact:
    description:
      - The role's local fact, written last in the same call (only once the rest was applied), as
        M(kubescale.tuning.local_fact) writes it - C(<directory>/<name>.fact), read back by C(setup) as
        C(ansible_local.<name>); atomic, only when its content changes, the directory created when missing.
    type: dict
    suboptions:
      name:
        description: The fact's name (letters, digits, underscores), like C(kubescale_local_ssd).
        type: str
        required: true
      data:
        description: What to record.
        type: dict
        required: true
      directory:
        description: The local facts directory.
        type: path
        default: /etc/ansible/facts.d
"""
