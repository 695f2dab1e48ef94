#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: kubelet_pulls
short_description: Parallel image pulls and the pull progress deadline, where this kubelet and runtime read them
version_added: "0.4.0"
description:
  - One call on the node for the whole tuning, where the role asked the kubelet its version, checked it and wrote the
    files in separate tasks.
  - Finds the kubelet's version (O(kubelet_version), else C(kubelet --version) on the node; none installed gets the
    current layout, with a warning) and checks it has what is asked (C(maxParallelImagePulls) needs 1.27).
  - Merges C(serializeImagePulls) (and C(maxParallelImagePulls)) into the KubeletConfiguration at O(config_path),
    keeping every other key. Puts the pull progress deadline where this kubelet and runtime read it - a kubelet before
    1.24 with Docker (dockershim) in C(KUBELET_EXTRA_ARGS) of O(env_file), other flags kept; Docker with kubelet 1.24
    and later in a cri-dockerd drop-in; with containerd nowhere here (C(containerd_tuning) sets containerd's own).
  - With O(kubeadm_patches_dir), the same fields as kubeadm's patch of the kubelet's configuration in that directory
    (C(kubeletconfiguration-kubescale+merge.yaml)), which C(kubeadm join --patches) and C(kubeadm upgrade node
    --patches) apply over the cluster's C(kubelet-config) when they rewrite O(config_path), so a node class keeps its
    own values, and a node that joins from a baked image gets them.
  - With O(kubeadm_record), the same fields in kubeadm's record of the kubelet's configuration, the
    C(kube-system/kubelet-config) ConfigMap, which C(kubeadm join) and C(kubeadm upgrade node) write every node's
    O(config_path) from - checked with C(kubeadm config validate) and sent as a server-side dry run before anything is
    written, sent for real last, at the resourceVersion it was read at.
  - Restarts the kubelet and cri-dockerd, when they run, if their file changed; records the fact
    C(kubescale_kubelet_pulls) last among the node's files. Applied with the code of M(kubescale.tuning.node_state)
    (atomic writes, exact check and diff mode).
  - Validates every value before changing anything; each failure names the variable (O(variable_prefix) + option).
author:
  - kubescale.tuning contributors (@kubescale)
options:
  config_path:
    description: The KubeletConfiguration file (created with apiVersion and kind when missing).
    type: path
    default: /var/lib/kubelet/config.yaml
  serialize_image_pulls:
    description: serializeImagePulls.
    type: bool
    default: false
  max_parallel_image_pulls:
    description: maxParallelImagePulls (kubelet 1.27 and later); unset leaves it out. Above 1 needs O(serialize_image_pulls=false).
    type: int
  image_pull_progress_deadline:
    description: How long a pull may make no progress before it is cancelled (a Go duration like C(30m)).
    type: str
    default: 30m
  kubelet_version:
    description: The kubelet's version (like C(1.29.4)); empty asks C(kubelet --version) on the node.
    type: str
    default: ""
  container_runtime:
    description: The node's runtime.
    type: str
    choices: [docker, containerd]
    default: docker
  env_file:
    description: The kubelet's environment file holding C(KUBELET_EXTRA_ARGS) (for a kubelet before 1.24).
    type: path
    default: /etc/default/kubelet
  cri_dockerd_command:
    description: cri-dockerd's command line without the deadline (the drop-in's C(ExecStart)).
    type: str
    default: /usr/bin/cri-dockerd --container-runtime-endpoint fd://
  service:
    description: Restart the kubelet and cri-dockerd when their file changed (only when they run); false in an image being baked.
    type: bool
    default: true
  kubeadm_patches_dir:
    description: kubeadm's patches directory on the node (what C(--patches) names); empty for none.
    type: path
    default: ""
  kubeadm_record:
    description:
      - Whether to write kubeadm's record of the kubelet's configuration (the C(kube-system/kubelet-config) ConfigMap),
        through the API server with O(kubeconfig). C(auto) on a node that has O(kubeconfig) and a cluster that has the
        ConfigMap (a kubeadm control plane node), skipped elsewhere; C(always) fails where it cannot; C(never) skips it.
    type: str
    choices: [auto, always, never]
    default: never
  kubeconfig:
    description: The kubeconfig kubeadm's record is written with (kubeadm's admin.conf on control plane nodes).
    type: path
    default: /etc/kubernetes/admin.conf
  variable_prefix:
    description: Put before an option's name in a failure, so it names the role's variable (C(kubelet_pulls_)).
    type: str
    default: ""
extends_documentation_fragment:
  - kubescale.tuning.attributes
attributes:
  check_mode:
    support: full
    details: >-
      Asks the kubelet its version as a real run does and predicts every file and restart exactly; kubeadm's
      validation and the record's dry run run too.
  diff_mode:
    support: full
    details: Shows each changed file (and kubeadm's record) before and after.
  platform:
    platforms: posix
requirements:
  - PyYAML on the node.
seealso:
  - module: kubescale.tuning.node_state
"""

EXAMPLES = r"""
- name: Pull in parallel and wait 30 minutes for a slow image
  kubescale.tuning.kubelet_pulls:
    serialize_image_pulls: false
    image_pull_progress_deadline: 30m
    container_runtime: docker
    variable_prefix: kubelet_pulls_
"""

RETURN = r"""
kubelet_version:
  description: The version the layout was chosen for; empty when no kubelet is installed and none was given.
  returned: success
  type: str
  sample: 1.29.4
layout:
  description: Where the deadline went - C(legacy) (KUBELET_EXTRA_ARGS), C(cri-dockerd) (drop-in) or C(containerd) (not here).
  returned: success
  type: str
  sample: cri-dockerd
changed_paths:
  description: The files and directories that changed (or would in check mode).
  returned: always
  type: list
  elements: str
actions:
  description: The systemd actions taken (or predicted), like C(restart kubelet.service).
  returned: always
  type: list
  elements: str
kubeadm_record:
  description: kubeadm's record of the kubelet's configuration, when it was there - its name and whether it changed.
  returned: always
  type: dict
  sample: {sources: ["ConfigMap kube-system/kubelet-config (kubelet)"], changed: []}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm_sync import SyncError, plan_kubelet
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubelet_pulls import (
    PullsError,
    check,
    check_version,
    node_state_spec,
    pull_settings,
    version_from_output,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.node.state import (
    NodeStateError,
    apply_or_fail,
    validate,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            config_path=dict(type="path", default="/var/lib/kubelet/config.yaml"),
            serialize_image_pulls=dict(type="bool", default=False),
            max_parallel_image_pulls=dict(type="int"),
            image_pull_progress_deadline=dict(type="str", default="30m"),
            kubelet_version=dict(type="str", default=""),
            container_runtime=dict(type="str", default="docker", choices=["docker", "containerd"]),
            env_file=dict(type="path", default="/etc/default/kubelet"),
            cri_dockerd_command=dict(type="str", default="/usr/bin/cri-dockerd --container-runtime-endpoint fd://"),
            service=dict(type="bool", default=True),
            kubeadm_patches_dir=dict(type="path", default=""),
            kubeadm_record=dict(type="str", default="never", choices=["auto", "always", "never"]),
            kubeconfig=dict(type="path", default="/etc/kubernetes/admin.conf"),
            variable_prefix=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    p = module.params
    prefix = p["variable_prefix"]
    try:
        check(p, prefix)
        version = p["kubelet_version"]
        if not version:
            binary = module.get_bin_path("kubelet")
            if binary:
                rc, out, err = module.run_command([binary, "--version"])
                version = version_from_output(out) if rc == 0 else ""
        version = version[1:] if version.startswith("v") else version
        check_version(p, version, prefix)
        spec, layout = node_state_spec(p, version, service=p["service"])
        spec = validate(spec)
    except (PullsError, NodeStateError) as exc:
        module.fail_json(msg=str(exc))
    try:
        import yaml
        sync = plan_kubelet(yaml, module.run_command, module.get_bin_path("kubeadm"),
                            dict(record=p["kubeadm_record"], kubeconfig=p["kubeconfig"]), pull_settings(p), prefix)
    except ImportError:
        module.fail_json(msg="kubelet_pulls needs PyYAML on the node (Debian/Ubuntu package python3-yaml)")
    except SyncError as exc:
        module.fail_json(msg="%skubeadm_record: %s. Nothing was changed." % (prefix, exc))
    if not version:
        module.warn("no kubelet is installed and %skubelet_version is empty: writing the kubelet 1.24+ layout "
                    "(KubeletConfiguration%s)" % (prefix, " and the cri-dockerd deadline" if layout == "cri-dockerd" else ""))
    result = apply_or_fail(module, spec)
    result.update(kubelet_version=version, layout=layout, kubeadm_record=dict(sources=sync.labels,
                                                                              changed=sync.changed))
    if sync.changed:
        result["changed"] = True
        if module._diff:
            result["diff"] = list(result.get("diff") or []) + sync.diffs()
        if not module.check_mode:
            try:
                sync.write()
            except SyncError as exc:
                module.fail_json(msg="%skubeadm_record: %s. The node's files are written: run again to record it."
                                 % (prefix, exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
