# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: an image archive's compression - told from its first bytes, and the argv that (de)compresses it.

Commands run from argv lists, never a shell; a decompressor streams into its reader. Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import subprocess

from .files import ArchiveError

COMPRESSIONS = ("zstd", "gzip", "none")


def detect_compression(path):
    with open(path, "rb") as f:
        head = f.read(4)
    if head == b"\x28\xb5\x2f\xfd":
        return "zstd"
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    return "none"


def decompress_argv(compression, path):
    if compression == "zstd":
        return ["zstd", "-dcq", "--", path]
    if compression == "gzip":
        return ["gzip", "-dc", "--", path]
    return None


def compress_argv(compression, level):
    if compression == "zstd":
        return ["zstd", "-q", "-c", "-T0", "-%d" % level]
    if compression == "gzip":
        return ["gzip", "-c", "-%d" % level]
    return None


def open_stream(path, compression):
    """(readable stream of the tar, process or None, raw file or None) for `path`."""
    argv = decompress_argv(compression, path)
    if argv is None:
        raw = open(path, "rb")
        return raw, None, raw
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc.stdout, proc, None


def close_stream(proc, raw, complete, path):
    """Stop the decompressor; when the stream was read to its end, a decompressor error is an ArchiveError."""
    if raw is not None:
        raw.close()
        return
    if not complete:
        proc.kill()
    proc.stdout.close()
    err = proc.stderr.read().decode("utf-8", "replace").strip()
    proc.stderr.close()
    rc = proc.wait()
    if complete and rc != 0:
        raise ArchiveError("%s: decompressing failed, the archive is corrupt or truncated (%s: %s)"
                           % (path, proc.args[0], err))
