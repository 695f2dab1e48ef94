# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: make a directory an exact, verified copy of another with rsync (dir_sync, store_move)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os


class SyncError(Exception):
    """The copy cannot be made or proven; `result` holds what was learnt so far."""

    def __init__(self, msg, result=None):
        super(SyncError, self).__init__(msg)
        self.result = result or {}


def tree_usage(top):
    """(entries, bytes allocated) under `top`, hard links counted once."""
    seen = set()
    entries = 0
    used = 0
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            entries += 1
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            used += st.st_blocks * 512
    return entries, used


def inside(child, parent):
    return child == parent or child.startswith(parent.rstrip("/") + "/")


def check_paths(src, dest):
    """Refuse what cannot be copied, before anything runs; returns src resolved."""
    for name, value in (("src", src), ("dest", dest)):
        if not os.path.isabs(value) or os.path.normpath(value) in ("/",):
            raise SyncError("%s: %r must be an absolute path other than /" % (name, value))
    real = os.path.realpath(src)
    dest_real = os.path.realpath(dest)
    if inside(dest_real, real) or inside(real, dest_real):
        raise SyncError("dest: %s and src %s must not contain each other" % (dest, real))
    if not os.path.isdir(real):
        raise SyncError("src: %s is not a directory" % real)
    if os.path.exists(dest) and not os.path.isdir(dest):
        raise SyncError("dest: %s exists and is not a directory" % dest)
    return real


def sync(run, rsync, src, dest, verify="metadata", check_mode=False):
    """Copy `src` to `dest` (rsync -aHAX --numeric-ids --delete) after a free-space check and prove it whole.

    `run(argv)` returns (rc, stdout, stderr). Returns (changed, result); raises SyncError naming the cause.
    """
    src = check_paths(src, dest)
    base = [rsync, "-aHAX", "--numeric-ids", "--delete"]
    if verify == "checksum":
        base.append("--checksum")

    def pending():
        if not os.path.isdir(dest):
            return None
        rc, out, err = run(base + ["--dry-run", "--itemize-changes", src + "/", dest + "/"])
        if rc != 0:
            raise SyncError("dest: comparing %s with %s failed: %s" % (src, dest, err.strip()))
        return [line for line in out.splitlines() if line.strip()]

    entries, used = tree_usage(src)
    before = pending()
    result = dict(src_bytes=used, files=entries, verified=before == [],
                  pending=entries + 1 if before is None else len(before))
    if before == []:
        return False, result
    if check_mode:
        return True, result
    parent = os.path.dirname(dest.rstrip("/")) or "/"
    probe = dest if os.path.isdir(dest) else parent
    st = os.statvfs(probe)
    free = st.f_bavail * st.f_frsize
    already = tree_usage(dest)[1] if os.path.isdir(dest) else 0
    if used - already > free:
        raise SyncError("dest: %s has %d bytes free, %s needs %d more; nothing was copied"
                        % (probe, free, src, used - already), result)
    if not os.path.isdir(dest):
        try:
            os.makedirs(dest)
        except OSError as exc:
            raise SyncError("dest: cannot create %s: %s" % (dest, exc), result) from exc
    rc, out, err = run(base + [src + "/", dest + "/"])
    if rc != 0:
        raise SyncError("dest: copying %s to %s failed (rsync exit %d): %s" % (src, dest, rc, err.strip()), result)
    after = pending()
    result["verified"] = after == []
    if after:
        raise SyncError("dest: %s still differs from %s after the copy (%d entries, first: %s)"
                        % (dest, src, len(after), after[0]), result)
    return True, result
