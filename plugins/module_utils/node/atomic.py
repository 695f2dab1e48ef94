# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: atomic file writes (temp file in the same directory, fsync, rename, fsync dir)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile


def read_text(path):
    """The file's text, or None when it does not exist."""
    try:
        with open(path, "r") as f:
            return f.read()
    except (IOError, OSError) as exc:
        if getattr(exc, "errno", None) == 2:
            return None
        raise


def atomic_write(path, data, mode=0o644):
    """Replace `path` with `data` (text) so that a reader sees the old or the new file, never half.

    Owner and mode of an existing file are kept; a new file gets `mode`.
    """
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            st = os.stat(path)
            os.chmod(tmp, st.st_mode & 0o7777)
            os.chown(tmp, st.st_uid, st.st_gid)
        except OSError:
            os.chmod(tmp, mode)
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def remove_file(path):
    """Remove `path` and make the removal durable; True when something was removed."""
    try:
        os.unlink(path)
    except OSError as exc:
        if exc.errno == 2:
            return False
        raise
    dfd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return True
