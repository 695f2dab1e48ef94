# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: which hosts one of K controllers runs, the way AWX/AAP job slicing splits an inventory (slice plugin)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class SliceError(ValueError):
    """A slice that cannot be taken, naming the option."""


def parse_slice(count, index):
    """(count, index) as whole numbers with 1 <= index <= count; raises naming the option."""
    try:
        count, index = int(str(count).strip()), int(str(index).strip())
    except ValueError:
        raise SliceError("count and index must be whole numbers, got count=%r index=%r" % (count, index)) from None
    if count < 1:
        raise SliceError("count must be 1 or more, got %d" % count)
    if not 1 <= index <= count:
        raise SliceError("index must be 1 to %d (count), got %d" % (count, index))
    return count, index


def slice_hosts(names, count, index):
    """The hosts of slice `index` of `count`: every count-th host of the names sorted, starting at the index-th.

    Every controller computes the same split from the same inventory; the slices are disjoint and their union is every
    host. A class's hosts (cpu-1 ... cpu-2000: consecutive once sorted) are dealt out in turn, so its slices differ
    by at most one host.
    """
    count, index = parse_slice(count, index)
    return sorted(names)[index - 1::count]
