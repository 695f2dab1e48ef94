#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: image_archive_info
short_description: Which image archive a node has, and which pause image its kubelet and runtime name
version_added: "0.4.0"
description:
  - Read-only, one call where a role read each file with its own task - C(image_preload) asks it before anything
    changes on the node.
  - Returns the sidecar of the archive at O(path) - what M(kubescale.tuning.image_archive) wrote beside it, the
    archive's sha256 and images - so the controller copies the archive only when the node's differs.
  - With O(pause_image), reads each of O(pause_sources) that exists - the kubelet's environment files (its
    C(--pod-infra-container-image) flag, read with the collection's environment-file parser) and
    C(containerd_tuning)'s fact (its C(sandbox_image)) - and returns each that names another pause image, both
    references normalized as docker and containerd compare them.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  path:
    description: The archive on the node; its sidecar is C(<path>.json).
    type: path
    required: true
  pause_image:
    description: The pause image being preloaded; unset skips the pause check.
    type: str
  pause_sources:
    description: Files that may name the node's pause image; a missing one is skipped.
    type: list
    elements: path
    default: []
  fail_on_conflict:
    description: Fail when a source names another pause image than O(pause_image), instead of only returning it.
    type: bool
    default: false
  pause_variable:
    description: The variable O(pause_image) came from, named in the failure message of O(fail_on_conflict).
    type: str
    default: pause_image
extends_documentation_fragment:
  - kubescale.tuning.attributes
  - kubescale.tuning.checks
  - kubescale.tuning.attributes.info
attributes:
  action:
    support: full
    description: An action plugin evaluates O(checks) on the controller first.
"""

EXAMPLES = r"""
- name: Read the node's archive sidecar and its pause image
  kubescale.tuning.image_archive_info:
    path: /var/lib/kubescale/images/preload.tar.zst
    pause_image: registry.k8s.io/pause:3.9
    pause_sources:
      - /var/lib/kubelet/kubeadm-flags.env
      - /etc/default/kubelet
    fail_on_conflict: true
    pause_variable: image_preload_pause_image
  register: node_archive
"""

RETURN = r"""
sidecar:
  description: The node's sidecar, empty when it has none or it is not valid JSON.
  returned: always
  type: dict
  sample: {sha256: 9f2c..., images: [registry.k8s.io/pause:3.9]}
pause_conflicts:
  description: C(<file> names <image>) for each source naming another pause image than O(pause_image).
  returned: always
  type: list
  elements: str
  sample: [/var/lib/kubelet/kubeadm-flags.env names registry.k8s.io/pause:3.8]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils._atomic import read_text
from ansible_collections.kubescale.tuning.plugins.module_utils._checks import CHECKS_ARGUMENT_SPEC
from ansible_collections.kubescale.tuning.plugins.module_utils._image_archive import (
    ArchiveError,
    conflict_message,
    normalize_ref,
    pause_conflicts,
    read_sidecar,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            pause_image=dict(type="str"),
            pause_sources=dict(type="list", elements="path", default=[]),
            fail_on_conflict=dict(type="bool", default=False),
            pause_variable=dict(type="str", default="pause_image"),
            checks=CHECKS_ARGUMENT_SPEC,
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["pause_image"] is not None:
        try:
            normalize_ref(p["pause_image"])
        except ValueError as exc:
            module.fail_json(msg="pause_image: %s" % exc)
    try:
        try:
            sidecar = read_sidecar(p["path"]) or {}
        except ArchiveError:
            sidecar = {}  # an unreadable sidecar names no archive: the role copies the archive and its sidecar again
        conflicts = []
        if p["pause_image"] is not None:
            sources = {}
            for path in p["pause_sources"]:
                try:
                    sources[path] = read_text(path)
                except (IOError, OSError) as exc:
                    module.fail_json(msg="pause_sources: cannot read %s: %s" % (path, exc))
            conflicts = pause_conflicts(sources, p["pause_image"])
    except ArchiveError as exc:
        module.fail_json(msg=str(exc))
    if conflicts and p["fail_on_conflict"]:
        module.fail_json(msg=conflict_message(p["pause_variable"], p["pause_image"], conflicts),
                         sidecar=sidecar, pause_conflicts=conflicts)
    module.exit_json(changed=False, sidecar=sidecar, pause_conflicts=conflicts)


if __name__ == "__main__":
    main()
