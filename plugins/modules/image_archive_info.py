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
  - Read-only, one call where a role read each file with its own task.
  - Returns the sidecar of the archive at O(path) - what M(kubescale.tuning.image_archive) wrote beside it, the
    archive's sha256 and images - so a caller can copy the archive only when the node's differs.
  - With O(pause_image), returns each of O(pause_sources) that names another pause image.
  - M(kubescale.tuning.image_archive) asks both in its own call before it loads
    (O(kubescale.tuning.image_archive#module:only_if_placed)); that is how the image_preload role reads a converged
    node, at no call of its own. This module is the read alone.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  path:
    description: The archive on the node; its sidecar is C(<path>.json).
    type: path
    required: true
extends_documentation_fragment:
  - kubescale.tuning.attributes
  - kubescale.tuning.checks
  - kubescale.tuning.pause_check
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

from ansible_collections.kubescale.tuning.plugins.module_utils.images.node import (
    PAUSE_ARGUMENT_SPEC,
    node_sidecar,
    pause_check,
    validate_pause,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.node.checks import CHECKS_ARGUMENT_SPEC


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            checks=CHECKS_ARGUMENT_SPEC,
            **PAUSE_ARGUMENT_SPEC
        ),
        supports_check_mode=True,
    )
    validate_pause(module)
    sidecar = node_sidecar(module.params["path"])
    conflicts = pause_check(module, sidecar=sidecar)
    module.exit_json(changed=False, sidecar=sidecar, pause_conflicts=conflicts)


if __name__ == "__main__":
    main()
