# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: what the image archive code asks of files - its error, digests, free space, temp names.

Standard library only: also installed on nodes with the boot-time loader.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import tempfile

CHUNK = 1 << 20


class ArchiveError(Exception):
    """A failure to report as is: names the archive, the image or the option."""


def sha256_file(path):
    """(hex digest, bytes read), streaming."""
    h = hashlib.sha256()
    n = 0
    with open(path, "rb") as f:
        while True:
            buf = f.read(CHUNK)
            if not buf:
                break
            h.update(buf)
            n += len(buf)
    return h.hexdigest(), n


def free_bytes(path):
    while not os.path.exists(path):
        path = os.path.dirname(path) or "/"
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def tmp_name(directory, base, suffix):
    fd, tmp = tempfile.mkstemp(prefix="." + base + ".", suffix=suffix, dir=directory)
    os.close(fd)
    return tmp


def fsync_dir(directory):
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
