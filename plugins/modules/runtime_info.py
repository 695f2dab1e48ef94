#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: runtime_info
short_description: Where a container runtime's store goes, and containerd's version and config layout
version_added: "0.4.0"
description:
  - Read-only. Settles the store's directory for docker or containerd - O(root) when given, else O(root_dir) on the
    local SSD, whose mount point is O(ssd_mount) (what C(kubescale.tuning.local_ssd) told this play) or what it
    recorded in O(local_ssd_fact) on an earlier run.
  - For containerd also its version (O(version), else C(containerd --version)) and the configuration layout to write,
    the file's own C(version) read as TOML, else 3 from containerd 2.0 and 2 before, and whether this containerd has
    C(image_pull_progress_timeout) (1.7 and later).
  - Fails naming the variable to set when the store's place or containerd's version cannot be settled, or when the
    file has a layout other than 2 and 3.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  runtime:
    description: The runtime.
    type: str
    required: true
    choices: [docker, containerd]
  root:
    description: The store's directory; empty puts it on the local SSD at O(root_dir).
    type: str
    default: ""
  root_dir:
    description: The store's directory relative to the SSD's mount point.
    type: str
    required: true
  ssd_mount:
    description: The SSD's mount point when this play knows it; empty reads O(local_ssd_fact).
    type: str
    default: ""
  local_ssd_fact:
    description: The fact file C(kubescale.tuning.local_ssd) records the mount point in.
    type: path
    default: /etc/ansible/facts.d/kubescale_local_ssd.fact
  config_path:
    description: containerd's configuration file (its layout is read from it when it exists).
    type: path
    default: /etc/containerd/config.toml
  version:
    description: containerd's version when known (an image bake without containerd); empty asks C(containerd --version).
    type: str
    default: ""
  root_variable:
    description: The name failures give for O(root).
    type: str
    default: root
  version_variable:
    description: The name failures give for O(version).
    type: str
    default: version
  overlay_check:
    description:
      - Also judge whether overlay2 can work at the store (docker) - the kernel's C(/proc/filesystems), the
        filesystem C(findmnt) finds at the store or its nearest existing parent, and its d_type support (C(xfs_info)'s
        C(ftype), ext4's C(filetype) feature through C(dumpe2fs -h)).
      - Returned as RV(overlay). A filesystem that cannot carry overlay2 fails the task, the message naming
        O(root_variable), before anything changes. A kernel without overlay is only RV(overlay.kernel), since the
        role can still load the module.
    type: bool
    default: false
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
- name: Find containerd's root, version and layout
  kubescale.tuning.runtime_info:
    runtime: containerd
    root_dir: containerd
  register: containerd_info
"""

RETURN = r"""
root:
  description: The store's directory.
  returned: success
  type: str
  sample: /mnt/local-ssd/containerd
ssd_mount:
  description: The SSD's mount point (empty when O(root) was given and none is known).
  returned: success
  type: str
version:
  description: containerd's version (containerd only).
  returned: success
  type: str
  sample: 1.6.20
config_version:
  description: The C(version) the configuration file has now; null when it has none or does not exist (containerd only).
  returned: success
  type: int
layout:
  description: The configuration layout to write, 2 or 3 (containerd only).
  returned: success
  type: int
pull_progress_timeout:
  description: Whether this containerd has C(image_pull_progress_timeout) (containerd only).
  returned: success
  type: bool
overlay:
  description: What O(overlay_check) found.
  returned: when O(overlay_check=true)
  type: dict
  contains:
    kernel:
      description: Whether the kernel lists the overlay filesystem.
      type: bool
    filesystem:
      description: findmnt's C(fstype), C(source) and C(target) at the store or its nearest existing parent.
      type: dict
    d_type:
      description: xfs_info's C(ftype=N) or ext4's C(Filesystem features) line; empty when unreadable.
      type: str
    root_exists:
      description: Whether the store's directory exists.
      type: bool
    problem:
      description: Why overlay2 cannot work there, the task failing with it; so empty in a result that succeeded.
      type: str
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import read_text
from ansible_collections.kubescale.tuning.plugins.module_utils.node.checks import CHECKS_ARGUMENT_SPEC
from ansible_collections.kubescale.tuning.plugins.module_utils.node.confmerge import ConfError
from ansible_collections.kubescale.tuning.plugins.module_utils.node.runtime_info import (
    InfoError,
    containerd_layout,
    existing_ancestor,
    findmnt_filesystem,
    has_pull_progress_timeout,
    overlay_problem,
    ssd_mount,
    store_root,
    version_of,
)


def _run(module, argv):
    rc, out, err = module.run_command(argv)
    return out if rc == 0 else ""


def overlay(module, root):
    """Whether overlay2 can work at root: the kernel's filesystems, findmnt, and xfs_info or dumpe2fs."""
    with open("/proc/filesystems") as f:
        kernel = any(line.split()[-1:] == ["overlay"] for line in f)
    target = existing_ancestor(root, os.path.exists)
    fs = findmnt_filesystem(_run(module, ["findmnt", "--json", "--nofsroot", "--output", "FSTYPE,SOURCE,TARGET",
                                          "--target", target]))
    dtype = ""
    if fs.get("fstype") == "xfs":
        dtype = " ".join(re.findall(r"ftype=[01]", _run(module, ["xfs_info", target])))
    elif fs.get("fstype") in ("ext2", "ext3", "ext4") and fs.get("source"):
        dtype = " ".join(line for line in _run(module, ["dumpe2fs", "-h", fs["source"]]).splitlines()
                         if line.startswith("Filesystem features"))
    root_exists = os.path.exists(root)
    return dict(kernel=kernel, filesystem=fs, d_type=dtype, root_exists=root_exists,
                problem=overlay_problem(fs, dtype, root_exists, module.check_mode, root))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            runtime=dict(type="str", required=True, choices=["docker", "containerd"]),
            root=dict(type="str", default=""),
            root_dir=dict(type="str", required=True),
            ssd_mount=dict(type="str", default=""),
            local_ssd_fact=dict(type="path", default="/etc/ansible/facts.d/kubescale_local_ssd.fact"),
            config_path=dict(type="path", default="/etc/containerd/config.toml"),
            version=dict(type="str", default=""),
            root_variable=dict(type="str", default="root"),
            version_variable=dict(type="str", default="version"),
            overlay_check=dict(type="bool", default=False),
            checks=CHECKS_ARGUMENT_SPEC,
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        fact = None if p["root"] or p["ssd_mount"] else read_text(p["local_ssd_fact"])
        mount = ssd_mount(p["ssd_mount"], fact)
        result = dict(changed=False, ssd_mount=mount,
                      root=store_root(p["root"], p["root_dir"], mount, p["root_variable"], p["local_ssd_fact"]))
        if p["runtime"] == "containerd":
            output = ""
            if not p["version"]:
                binary = module.get_bin_path("containerd")
                if binary:
                    output = module.run_command([binary, "--version"])[1]
            version = version_of(p["version"], output, p["version_variable"], "containerd")
            config_version, layout = containerd_layout(read_text(p["config_path"]), version, p["config_path"])
            result.update(version=version, config_version=config_version, layout=layout,
                          pull_progress_timeout=has_pull_progress_timeout(version))
        if p["overlay_check"]:
            result["overlay"] = overlay(module, result["root"])
            if result["overlay"]["problem"]:
                module.fail_json(msg="%s: %s" % (p["root_variable"], result["overlay"]["problem"]), **result)
    except (InfoError, ConfError) as exc:
        module.fail_json(msg=str(exc))
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot read %s: %s" % (getattr(exc, "filename", ""), exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
