# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: which pause image a node's kubelet and runtime name, against the one being preloaded."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import shlex

from ansible_collections.kubescale.tuning.plugins.module_utils.node.confmerge import parse_env

from .files import ArchiveError
from .ref import normalize_ref

PAUSE_FLAG = "--pod-infra-container-image"


def pause_image_in(path, text):
    """The pause image a node's file names, or '' when it names none.

    A `.fact` file is containerd_tuning's JSON fact (its `sandbox_image`); any other file is a systemd environment
    file (kubeadm-flags.env, /etc/default/kubelet) whose variables carry the kubelet's flags.
    """
    if path.endswith(".fact"):
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise ArchiveError("%s is not valid JSON: %s" % (path, exc)) from exc
        return (doc.get("sandbox_image") or "") if isinstance(doc, dict) else ""
    try:
        env = parse_env(text)
    except ValueError as exc:
        raise ArchiveError("%s: %s" % (path, exc)) from exc
    for value in env.values():
        words = shlex.split(value) if isinstance(value, str) else []
        for i, word in enumerate(words):
            if word.startswith(PAUSE_FLAG + "="):
                return word.split("=", 1)[1]
            if word == PAUSE_FLAG and i + 1 < len(words):
                return words[i + 1]
    return ""


def pause_conflicts(sources, pause_image):
    """['<file> names <image>', ...] for each of {path: text or None} naming another pause image than pause_image."""
    want = normalize_ref(pause_image)
    found = []
    for path in sources:
        text = sources[path]
        if text is None:
            continue
        image = pause_image_in(path, text)
        if not image:
            continue
        try:
            same = normalize_ref(image) == want
        except ValueError:
            same = False
        if not same:
            found.append("%s names %s" % (path, image))
    return found


def conflict_message(variable, image, conflicts):
    """The failure naming the variable, what the node's files name, and the two ways to agree."""
    return ("%s (%s) is not the pause image this node uses: %s. Set %s to it, or make the kubelet's "
            "--pod-infra-container-image and the runtime's sandbox image name %s."
            % (variable, image, "; ".join(conflicts), variable, image))
