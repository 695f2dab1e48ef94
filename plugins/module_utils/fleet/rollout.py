# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A rollout's batch sizes (a play's serial) and its failure threshold (max_fail_percentage), judged before a play
starts: ansible-core's own reading of a bad one stops with a Python traceback naming neither the keyword nor the
variable (filter/rollout.py names the variable)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.module_utils.six import string_types

_PERCENT = re.compile(r"^([0-9]+(?:\.[0-9]+)?)%$")


def size_problem(value):
    """Why value is not one batch size: a whole number of hosts, 1 or more, or a share of them like 10% (above 0,
    at most 100); '' when it is one."""
    if isinstance(value, bool):
        return "%r is not a batch size" % (value,)
    if isinstance(value, int):
        return "" if value >= 1 else "%d hosts is not a batch (1 or more)" % value
    if isinstance(value, string_types):
        text = value.strip()
        if text.isdigit():
            return size_problem(int(text))
        match = _PERCENT.match(text)
        if match:
            if 0 < float(match.group(1)) <= 100:
                return ""
            return "%s is not a share of the hosts (above 0%%, at most 100%%)" % text
    return "%r is not a whole number of hosts or a percentage like 10%%" % (value,)


def batch_problem(value):
    """Why value is not a play's serial: one batch size, or a non-empty list of them (the last repeats); ''."""
    sizes = value if isinstance(value, list) else [value]
    if not sizes:
        return "an empty list sizes no batch"
    return "; ".join(p for p in (size_problem(v) for v in sizes) if p)


def percent_problem(value):
    """Why value is not a max_fail_percentage, a number from 0 to 100; ''."""
    try:
        number = None if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        number = None
    if number is None or not 0 <= number <= 100:
        return "%r is not a percentage of failed hosts from 0 to 100" % (value,)
    return ""
