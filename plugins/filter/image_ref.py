# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: image_ref
short_description: The fully qualified form of a container image reference
version_added: "0.3.0"
description:
  - "C(pause:3.9) becomes C(docker.io/library/pause:3.9), a missing tag becomes C(latest): the form docker and
    containerd agree on, so two spellings of one image compare equal. The same rules kubescale.tuning.image_archive
    applies."
author:
  - kubescale.tuning contributors (@kubescale)
positional: _input
options:
  _input:
    description: An image reference, C([registry/]name[:tag]).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Compare the kubelet's pause image with the one preloaded
  ansible.builtin.assert:
    that: (kubelet_pause | kubescale.tuning.image_ref) == (image_preload_pause_image | kubescale.tuning.image_ref)
"""

RETURN = r"""
_value:
  description: The normalized reference.
  type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.kubescale.tuning.plugins.plugin_utils._lazy import LazyModule

_ref = LazyModule("module_utils.images.ref")  # imported at the first call, not with this file
_sidecar = LazyModule("module_utils.images.sidecar")


def image_ref(ref):
    try:
        return _ref.normalize_ref(str(ref))
    except ValueError as exc:
        raise AnsibleFilterError("image_ref: %s" % exc) from exc


def image_ref_errors(refs):
    """The references of a list that are not image references, each with the reason (for validation)."""
    errors = []
    normalize_ref = _ref.normalize_ref
    for ref in refs if isinstance(refs, (list, tuple)) else [refs]:
        try:
            normalize_ref(ref)
        except ValueError as exc:
            errors.append(str(exc))
    return errors


def sidecar_url(url):
    try:
        return _sidecar.sidecar_url(str(url))
    except ValueError as exc:
        raise AnsibleFilterError("sidecar_url: %s" % exc) from exc


def url_errors(url):
    """Why `url` cannot be an archive URL (for validation), or an empty string."""
    try:
        _sidecar.sidecar_url(str(url))
    except ValueError as exc:
        return str(exc)
    return ""


class FilterModule(object):
    def filters(self):
        return {"image_ref": image_ref, "image_ref_errors": image_ref_errors, "sidecar_url": sidecar_url,
                "url_errors": url_errors}
