# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A module of this collection imported at its first use, not when the file naming it is loaded.

ansible-core finds a collection's filter by importing every filter file of the collection in turn, in each forked
worker that uses one; a filter file that imported its module_utils (python-cryptography for x509_due) at load made
every task using any kubescale.tuning filter pay for all of them (tests/unit/plugins/filter/test_filter_imports.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

_PLUGINS = "ansible_collections.kubescale.tuning.plugins."


class LazyModule:
    """``LazyModule('module_utils.kube.apf').problems`` imports plugins/module_utils/kube/apf.py at that first read."""

    def __init__(self, name):
        self._name = _PLUGINS + name

    def __getattr__(self, attr):
        # Only names the instance lacks reach here; after the first import, import_module answers from sys.modules.
        return getattr(importlib.import_module(self._name), attr)
