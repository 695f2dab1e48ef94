# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for kubescale.tuning.image_archive: the task's `checks` first, on the controller (rules as check_vars
evaluates them), then the module without them, the files of its node_state sent by hash - a file's text crosses the
wire only to a node whose copy differs (plugin_utils/_by_hash.py)."""

from __future__ import annotations

from ansible_collections.kubescale.tuning.plugins.plugin_utils._rules import CheckedModuleAction


class ActionModule(CheckedModuleAction):
    """Rules, then kubescale.tuning.image_archive, node_state's files by hash."""

    MODULE = "kubescale.tuning.image_archive"
