# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for kubescale.tuning.node_state: `checks` first, on the controller (plugin_utils/_rules.py: a role whose
first change is this call checks its variables in the same task); then the module, a whole file's text crossing the
wire only when the node needs it (`files[].src` sent by sha256, plugin_utils/_by_hash.py)."""

from __future__ import annotations

from ansible_collections.kubescale.tuning.plugins.plugin_utils._rules import CheckedModuleAction


class ActionModule(CheckedModuleAction):
    """Rules, then kubescale.tuning.node_state with its files sent by hash."""

    MODULE = "kubescale.tuning.node_state"
    FILES_AT = ("files",)
