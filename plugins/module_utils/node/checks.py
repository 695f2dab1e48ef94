# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The argument spec of `checks` (doc fragment kubescale.tuning.checks): a module whose action evaluates a role's
rules on the controller declares the option, which its action removes before the module runs on the node."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

CHECKS_ARGUMENT_SPEC = dict(type="list", elements="dict", options=dict(
    that=dict(type="raw", required=True),
    msg=dict(type="str", required=True),
    warn=dict(type="bool", default=False),
))
