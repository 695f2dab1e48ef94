# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """The pause-image check of image_archive_info and image_archive (kubescale.tuning.pause_check)."""

    DOCUMENTATION = r"""
options:
  pause_image:
    description:
      - The pause image being preloaded; unset skips the pause check.
      - Set, each of O(pause_sources) that exists is read before anything changes on the node - the kubelet's
        environment files (its C(--pod-infra-container-image) flag, read with the collection's environment-file
        parser) and C(containerd_tuning)'s fact (its C(sandbox_image)) - and each that names another pause image is
        returned, both references normalized as docker and containerd compare them.
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
"""
