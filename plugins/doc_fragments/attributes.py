# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """The descriptions of the attributes every kubescale.tuning module documents; modules add `support`."""

    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
"""

    # A module that only reads: kubescale.tuning.attributes.info
    INFO = r"""
options: {}
attributes:
  check_mode:
    support: full
    details: Reads only; the same answer in check mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
"""
