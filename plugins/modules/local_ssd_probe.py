#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: local_ssd_probe
short_description: Find the Azure local instance SSD and decide what preparing it takes
version_added: "0.1.0"
description:
  - Finds the local SSD - O(device) when set; else C(/dev/disk/azure/resource) (its first partition when it
    has one); else Azure NVMe temp disks (model C(Microsoft NVMe Direct Disk)) - and fails listing what it
    looked at when there is none.
  - Refuses the OS disk and any disk holding a filesystem mounted somewhere other than O(mount) or the
    Azure agent's C(/mnt) and C(/mnt/resource).
  - Decides, the way cloud-init does for Azure, whether formatting is safe - the device is blank, NTFS holding
    nothing but C(DATALOSS_WARNING_README.txt), or already carries our label - and fails naming the device
    and what it found otherwise, unless O(force_format=true).
  - An SSD already mounted with O(fstype=xfs) needs C(ftype=1) (C(xfs_info)), which overlay2 needs for d_type;
    one without fails here, before anything changes, unless it is ours and O(force_format=true) (then C(format)).
  - Returns the fact C(kubescale_local_ssd) with the C(action) converge must take. Changes nothing, unless
    O(node_state) is given and the SSD needs no work (C(action=none)) at O(mount); then the rest of the tuning - the
    boot unit, the consumers' drop-ins and directories, the role's fact - is applied in this same call, so a
    converged node costs one module run (RV(node_state_applied)). An SSD that needs formatting or mounting, or that
    the Azure agent mounted elsewhere, is left to the role's next steps with O(node_state) not applied.
  - The boot unit installed by the C(kubescale.tuning.local_ssd) role runs the same code at every boot.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  device:
    description: The device to use; empty to discover it.
    type: str
    default: ""
  fstype:
    description: The filesystem the SSD gets.
    type: str
    choices: [ext4, xfs]
    default: ext4
  label:
    description: The filesystem label that marks the SSD as ours (ext4 up to 16, xfs up to 12 characters).
    type: str
    default: kubescale
  mount:
    description: Where the SSD is mounted.
    type: path
    default: /mnt/local-ssd
  force_format:
    description: Format even a disk holding foreign data. Destroys that data.
    type: bool
    default: false
  probe:
    description:
      - Look for the SSD.
      - V(false) in an image being baked, which has no SSD. Nothing is looked for, no fact C(kubescale_local_ssd) is
        returned, and O(node_state) is applied as given (the role's whole bake in this one call).
    type: bool
    default: true
extends_documentation_fragment:
  - kubescale.tuning.attributes
  - kubescale.tuning.checks
  - kubescale.tuning.node_state.nested
attributes:
  action:
    support: full
    description: >-
      An action plugin evaluates O(checks) on the controller first, and sends O(node_state.files[].src) by hash, its
      text only to a node whose copy differs.
  check_mode:
    support: full
    details: Reads only; predicts O(node_state).
  diff_mode:
    support: full
    details: O(node_state)'s changes.
  platform:
    platforms: linux
requirements:
  - blkid (util-linux), ntfsls (ntfs-3g) on the node
"""

EXAMPLES = r"""
- name: Find the local SSD and what it holds
  kubescale.tuning.local_ssd_probe:
    fstype: xfs
    mount: /mnt/local-ssd

- name: Find the SSD; when it is ready as ours, install the boot unit and record the fact in the same call
  kubescale.tuning.local_ssd_probe:
    mount: /mnt/local-ssd
    node_state:
      fact:
        name: kubescale_local_ssd
        data:
          mount: /mnt/local-ssd
  register: probe

- name: Show the decision
  ansible.builtin.debug:
    msg: "{{ kubescale_local_ssd.device }}: {{ kubescale_local_ssd.verdict }} -> {{ kubescale_local_ssd.action }}"
"""

RETURN = r"""
ansible_facts:
  description: The probe's findings.
  returned: when O(probe=true)
  type: dict
  contains:
    kubescale_local_ssd:
      description: Device, what it holds, where it is mounted, and what converge must do.
      type: dict
      sample:
        device: /dev/sdb
        looked_at: [/dev/disk/azure/resource-part1, /dev/disk/azure/resource, "partitions of /dev/sdb: none"]
        verdict: ntfs-readme-only
        detail: NTFS holding only DATALOSS_WARNING_README.txt
        found: ntfs
        found_label: Temporary Storage
        mounted_at: []
        mount: /mnt/local-ssd
        action: format
node_state_applied:
  description: Whether O(node_state) was applied (given, and O(probe=false) or the SSD needed no work at O(mount)).
  returned: always
  type: bool
node_state:
  description: What O(node_state) changed (in check mode, would), as M(kubescale.tuning.node_state) returns it.
  returned: always
  type: dict
  contains:
    changed_paths:
      description: The paths created or changed.
      type: list
      elements: str
    actions:
      description: What was asked of systemd.
      type: list
      elements: str
content_needed:
  description: Indices into O(node_state.files) whose text the node needs; the module changed nothing (the action
    consumes this).
  returned: when a file given by sha256 differs
  type: list
  elements: int
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.node.checks import CHECKS_ARGUMENT_SPEC
from ansible_collections.kubescale.tuning.plugins.module_utils.node.local_ssd import (
    AGENT_MOUNTS,
    Disks,
    SsdError,
    check_not_in_use,
    choose_device,
    validate_config,
    verdict,
    xfs_ftype_problem,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.node.state import (
    NODE_STATE_ARGUMENT_SPEC,
    finish,
    nested_spec,
    require_content,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            device=dict(type="str", default=""),
            fstype=dict(type="str", default="ext4", choices=["ext4", "xfs"]),
            label=dict(type="str", default="kubescale"),
            mount=dict(type="path", default="/mnt/local-ssd"),
            force_format=dict(type="bool", default=False),
            probe=dict(type="bool", default=True),
            checks=CHECKS_ARGUMENT_SPEC,
            node_state=NODE_STATE_ARGUMENT_SPEC,
        ),
        supports_check_mode=True,
    )
    p = module.params
    state = nested_spec(module, ask_content=False)

    def runner(argv):
        return module.run_command(argv)

    try:
        validate_config({"fstype": p["fstype"], "label": p["label"], "mount": p["mount"]})
    except SsdError as exc:
        module.fail_json(msg=str(exc))
    if not p["probe"]:
        # An image being baked: no SSD to look at (the boot unit finds it at the node's first boot).
        require_content(module, state)
        module.exit_json(**finish(module, state, dict(changed=False, node_state_applied=bool(state))))

    disks = Disks("/", runner)
    try:
        dev, looked = choose_device(disks, p["device"] or None)
        check_not_in_use(disks, dev, p["mount"])
        mounted = disks.mounted_at(dev)
        facts = {"device": dev, "looked_at": looked, "mounted_at": mounted}
        if p["mount"] in mounted:
            facts.update(verdict(disks, dev, p["label"], p["fstype"]))
            facts["mount"] = p["mount"]
            if facts["verdict"] == "ours":
                facts.update(action="none", detail="%s, mounted at %s" % (facts["detail"], p["mount"]))
                problem = xfs_ftype_problem(runner, p["mount"]) if p["fstype"] == "xfs" else ""
                if problem and not p["force_format"]:
                    module.fail_json(msg="local_ssd_fstype: %s; set local_ssd_force_format=true to reformat it "
                                         "(drops its data)" % problem, kubescale_local_ssd=facts)
                if problem:
                    module.warn("local_ssd_force_format: reformatting %s: %s" % (dev, problem))
                    facts.update(action="format", detail=problem)
            elif not p["force_format"]:
                module.fail_json(msg="local_ssd_fstype/local_ssd_label: %s is mounted at %s but holds %s; set "
                                     "local_ssd_force_format=true to unmount and reformat it (drops its data)"
                                     % (dev, p["mount"], facts["detail"]), kubescale_local_ssd=facts)
            else:
                module.warn("local_ssd_force_format: unmounting and reformatting %s, which holds %s"
                            % (dev, facts["detail"]))
                facts["action"] = "format"
        elif mounted:
            agent = [m for m in mounted if m in AGENT_MOUNTS][0]
            facts.update(verdict="agent-mounted", detail="mounted by the Azure agent at %s: reused" % agent,
                         mount=agent, action="none", found=None, found_label=None)
            problem = xfs_ftype_problem(runner, agent) if p["fstype"] == "xfs" else ""
            if problem:
                module.fail_json(msg="local_ssd_fstype: %s, which the Azure agent mounted; set local_ssd_fstype to "
                                     "what it holds or unmount it" % problem, kubescale_local_ssd=facts)
        else:
            facts.update(verdict(disks, dev, p["label"], p["fstype"]))
            facts["mount"] = p["mount"]
            if facts["verdict"] == "foreign" and not p["force_format"]:
                module.fail_json(msg="local_ssd_device: %s holds %s; formatting it would destroy that data. Set "
                                     "local_ssd_force_format=true if it is disposable, or local_ssd_device to "
                                     "another disk" % (dev, facts["detail"]), kubescale_local_ssd=facts)
            facts["action"] = "mount" if facts["verdict"] == "ours" else "format"
            if facts["verdict"] == "foreign":
                module.warn("local_ssd_force_format: formatting %s, which holds %s" % (dev, facts["detail"]))
    except SsdError as exc:
        module.fail_json(msg=str(exc))
    result = dict(changed=False, ansible_facts={"kubescale_local_ssd": facts})
    ready = facts["action"] == "none" and facts["mount"] == p["mount"]
    if ready:
        # Only a node that applies it now needs a file's text (the role's own node_state call sends it otherwise).
        require_content(module, state)
    result["node_state_applied"] = bool(state) and ready
    module.exit_json(**finish(module, state if ready else None, result))


if __name__ == "__main__":
    main()
