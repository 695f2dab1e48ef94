# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: what image_archive and image_archive_info ask of a node before anything changes on it - whether its
kubelet and runtime name the pause image being preloaded, and whether it already holds an archive.

Kept out of the standard-library modules the boot-time loader takes to nodes (images.boot), which needs neither.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import read_text

from .files import ArchiveError
from .pause import conflict_message, pause_conflicts
from .ref import normalize_ref, parse_sha256
from .sidecar import read_sidecar

PAUSE_ARGUMENT_SPEC = dict(
    pause_image=dict(type="str"),
    pause_sources=dict(type="list", elements="path", default=[]),
    fail_on_conflict=dict(type="bool", default=False),
    pause_variable=dict(type="str", default="pause_image"),
)


def validate_pause(module):
    """Fail naming pause_image unless it is unset or an image reference (before anything is read)."""
    if module.params["pause_image"] is not None:
        try:
            normalize_ref(module.params["pause_image"])
        except ValueError as exc:
            module.fail_json(msg="pause_image: %s" % exc)


def pause_check(module, **result):
    """The conflicts of the module's pause_sources with its pause_image ([] when pause_image is unset): each source
    that exists is read, a missing one skipped. With fail_on_conflict, a conflict fails the module naming
    pause_variable and the files; `result` goes with that failure."""
    p = module.params
    if p["pause_image"] is None:
        return []
    sources = {}
    for path in p["pause_sources"]:
        try:
            sources[path] = read_text(path)
        except (IOError, OSError) as exc:
            module.fail_json(msg="pause_sources: cannot read %s: %s" % (path, exc))
    try:
        conflicts = pause_conflicts(sources, p["pause_image"])
    except ArchiveError as exc:
        module.fail_json(msg=str(exc))
    if conflicts and p["fail_on_conflict"]:
        module.fail_json(msg=conflict_message(p["pause_variable"], p["pause_image"], conflicts),
                         pause_conflicts=conflicts, **result)
    return conflicts


def node_sidecar(path):
    """The sidecar beside the archive at path, {} when the node has none or it is not valid JSON (it names no
    archive: the caller places the archive and its sidecar again)."""
    try:
        return read_sidecar(path) or {}
    except ArchiveError:
        return {}


def holds(path, checksum):
    """True when the node's sidecar beside path names the archive whose sha256 is checksum (sha256:<hex> or <hex>):
    the archive was placed whole, as the sidecar follows it."""
    return str(node_sidecar(path).get("sha256") or "").lower() == parse_sha256(checksum)
