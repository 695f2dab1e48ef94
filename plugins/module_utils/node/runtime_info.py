# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: where a container runtime's store goes, and (containerd) its version and config layout (runtime_info)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.kubescale.tuning.plugins.module_utils.node.confmerge import parse

_VERSION = re.compile(r"\sv?([0-9]+\.[0-9]+(?:\.[0-9]+)?)")


class InfoError(Exception):
    """What cannot be settled, naming the variable to set."""


def ssd_mount(known, fact_text):
    """The local SSD's mount point: the one this play knows (local_ssd's fact), else the one local_ssd recorded."""
    if known:
        return known
    if not fact_text:
        return ""
    try:
        return str(json.loads(fact_text).get("mount") or "")
    except (ValueError, AttributeError):
        return ""


def store_root(root, root_dir, mount, root_variable, fact_path):
    """The store's directory: `root` when set, else `root_dir` on the SSD."""
    if root:
        return root
    if not mount:
        raise InfoError("%s is empty, so the store goes on the local SSD, but no SSD mount is known: apply "
                        "kubescale.tuning.local_ssd first (it records %s) or set %s"
                        % (root_variable, fact_path, root_variable))
    return mount.rstrip("/") + "/" + root_dir.strip("/")


def version_of(given, output, version_variable, binary):
    """`given` (a leading v dropped), else the first x.y[.z] in the binary's --version output."""
    if given:
        return given[1:] if given.startswith("v") else given
    m = _VERSION.search(" " + (output or ""))
    if not m:
        raise InfoError("%s is empty and `%s --version` gave no version (is it installed?)" % (version_variable, binary))
    return m.group(1)


def _at_least(version, major, minor):
    parts = [int(p) for p in version.split(".")[:2]]
    return (parts + [0])[:2] >= [major, minor]


def containerd_layout(config_text, version, config_path):
    """(the file's `version`, or None; the layout to write): the file's own, else 3 from containerd 2.0, else 2."""
    data = parse("toml", config_text, config_path) if config_text else {}
    file_version = data.get("version") if isinstance(data, dict) else None
    if file_version is not None and not isinstance(file_version, int):
        raise InfoError("%s: version = %r is not a whole number" % (config_path, file_version))
    layout = file_version if file_version is not None else (3 if _at_least(version, 2, 0) else 2)
    if layout not in (2, 3):
        raise InfoError("%s has config version %d, only 2 and 3 are known" % (config_path, layout))
    return file_version, layout


def has_pull_progress_timeout(version):
    """containerd reads image_pull_progress_timeout from 1.7."""
    return _at_least(version, 1, 7)


# ---------------------------------------------------------------------------------------------- overlay2 support

OVERLAY_FSTYPES = ("xfs", "ext4", "ext3", "btrfs", "tmpfs")


def existing_ancestor(path, exists):
    """`path` or its nearest ancestor that exists (what findmnt can be asked about before the store is made)."""
    while not exists(path) and path not in ("/", ""):
        path = path.rsplit("/", 1)[0] or "/"
    return path


def findmnt_filesystem(output):
    """The first filesystem of `findmnt --json --output FSTYPE,SOURCE,TARGET` (a dict), or raise InfoError."""
    try:
        return json.loads(output)["filesystems"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        raise InfoError("findmnt gave no filesystem: %r" % (output[:200],)) from None


def overlay_problem(fs, dtype_text, root_exists, check_mode, root):
    """'' when the filesystem at `root` can carry overlay2; otherwise why not, in the words docker_overlay2 reports.

    fs: findmnt's filesystem of the root (or its nearest existing ancestor); dtype_text: xfs_info's `ftype=N`, ext*'s
    `Filesystem features:` line, or '' when unreadable (a container volume's device is not visible: not judged here;
    dockerd itself refuses a backing filesystem without d_type, and a move then rolls back). In check mode on a fresh
    node the SSD is not mounted yet: the filesystem is not judged before the real run.
    """
    fstype = fs.get("fstype") or ""
    if check_mode and not root_exists:
        return ""
    ok = fstype in OVERLAY_FSTYPES and not (fstype == "xfs" and "ftype=1" not in dtype_text) and not (
        fstype in ("ext4", "ext3") and dtype_text != "" and not re.search(r"features:.*[ ]filetype([ ]|$)", dtype_text))
    if ok:
        return ""
    return ("overlay2 cannot work at %s: it is on %s (%s at %s). overlay2 needs d_type: xfs made with ftype=1 "
            "(mkfs.xfs -n ftype=1; local_ssd_fstype=xfs does this), ext4 with the filetype feature, btrfs or tmpfs; "
            "not overlay, aufs, nfs or cifs" % (root, fstype, fs.get("source"), fs.get("target")))
