# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for kubescale.tuning.local_ssd_probe: the task's `checks` first, on the controller (rules as check_vars
evaluates them), then the module without them - a role's variable checks and its first call to the node in one
task."""

from __future__ import annotations

from ansible_collections.kubescale.tuning.plugins.plugin_utils._rules import CheckedModuleAction


class ActionModule(CheckedModuleAction):
    """Rules, then kubescale.tuning.local_ssd_probe."""

    MODULE = "kubescale.tuning.local_ssd_probe"
