# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: container image references and digests, the one place they are normalized.

Used on the controller (the image_ref filter, the image_preload role's checks) and on the node (image_archive, the
boot-time loader). Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_NAME_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_DOMAIN = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]+)?$")
_SHA256 = re.compile(r"^(?:sha256:)?([0-9a-f]{64})$")


def normalize_ref(ref):
    """The fully qualified form docker and containerd agree on: 'pause:3.9' -> 'docker.io/library/pause:3.9'.

    Only name[:tag] references: a digest reference cannot be re-tagged by a load.
    """
    if not isinstance(ref, str) or not ref or ref.strip() != ref or "@" in ref:
        raise ValueError("%r is not an image reference of the form [registry/]name[:tag]" % (ref,))
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > slash:
        repo, tag = ref[:colon], ref[colon + 1:]
    else:
        repo, tag = ref, "latest"
    first, sep, rest = repo.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        domain, path = first, rest
    else:
        domain, path = "docker.io", repo
    if domain == "index.docker.io":
        domain = "docker.io"
    if domain == "docker.io" and "/" not in path:
        path = "library/" + path
    if not _DOMAIN.match(domain) or not _TAG.match(tag) or not all(_NAME_COMPONENT.match(c) for c in path.split("/")):
        raise ValueError("%r is not an image reference of the form [registry/]name[:tag]" % (ref,))
    return "%s/%s:%s" % (domain, path, tag)


def parse_sha256(value):
    """'sha256:<hex>' or '<hex>' -> '<hex>'; ValueError otherwise."""
    m = _SHA256.match(value.strip().lower()) if isinstance(value, str) else None
    if not m:
        raise ValueError("%r is not a sha256 digest (64 hex digits, optionally prefixed sha256:)" % (value,))
    return m.group(1)
