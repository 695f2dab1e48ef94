#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: kubeadm_drift
short_description: Find what kubeadm upgrade would revert on a node - settings its manifests or kubelet run that kubeadm does not record
version_added: "0.9.0"
description:
  - Reads, on a node, the static pod manifests kubeadm renders (kube-apiserver, kube-controller-manager,
    kube-scheduler, etcd) and the ClusterConfiguration kubeadm renders them from - kubeadm's record in the cluster
    (the C(kube-system/kubeadm-config) ConfigMap, through the API server with O(kubeconfig)) and, with
    O(kubeadm_config), a kubeadm configuration file on the node (an external etcd host's own) - and compares them.
  - A drift is a flag the collection tunes (C(--etcd-servers-overrides), the inflight limits, the scheduler's
    C(--config), etcd's C(--data-dir) and C(--quota-backend-bytes)), or any extraArg the configuration carries, whose
    value on the node differs from kubeadm's; C(kubeadm upgrade) would render kubeadm's. For etcd, C(--data-dir) is
    compared with C(etcd.local.dataDir).
  - With the record, the kubelet's pull settings (C(serializeImagePulls), C(maxParallelImagePulls)) in
    O(kubelet_config) are compared with kubeadm's record of the kubelet's configuration (C(kube-system/kubelet-config)),
    which C(kubeadm upgrade node) writes the file from.
  - Read-only. A node with neither the record nor the file reports no sources and no drift (not a kubeadm node).
author:
  - kubescale.tuning contributors (@kubescale)
options:
  manifests_dir:
    description: The kubelet's static pod directory.
    type: path
    default: /etc/kubernetes/manifests
  kubeadm_config:
    description: A kubeadm configuration file on the node to compare the manifests with; empty for none.
    type: path
    default: ""
  record:
    description:
      - C(auto) compares with kubeadm's record where the node has O(kubeconfig) and the cluster the ConfigMap;
        C(always) fails where it cannot; C(never) leaves it out.
    type: str
    choices: [auto, always, never]
    default: auto
  kubeconfig:
    description: The kubeconfig kubeadm's record is read with.
    type: path
    default: /etc/kubernetes/admin.conf
  kubelet_config:
    description: The kubelet's configuration file.
    type: path
    default: /var/lib/kubelet/config.yaml
extends_documentation_fragment:
  - kubescale.tuning.attributes
attributes:
  check_mode:
    support: full
    details: Reads only, in either mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
requirements:
  - PyYAML on the node.
"""

EXAMPLES = r"""
- name: What would kubeadm upgrade revert on this control plane node?
  kubescale.tuning.kubeadm_drift:
  register: drift

- name: On an external etcd host, against its own kubeadm configuration
  kubescale.tuning.kubeadm_drift:
    kubeadm_config: /etc/kubernetes/kubeadmcfg.yaml
"""

RETURN = r"""
sources:
  description: What the node was compared with - a file's path, kubeadm's record.
  returned: always
  type: list
  elements: str
drift:
  description: One entry per difference, with the component, the setting, the node's and kubeadm's values, the source.
  returned: always
  type: list
  elements: dict
  sample: [{component: kube-apiserver, setting: --etcd-servers-overrides, node: "/events#https://10.0.0.7:2383",
            kubeadm: null, source: "ConfigMap kube-system/kubeadm-config (ClusterConfiguration)",
            message: "kubeadm upgrade would revert kube-apiserver --etcd-servers-overrides: ..."}]
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm import KubeadmError, cluster_configuration
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm_drift import (
    PodError,
    component_drift,
    describe,
    kubelet_drift,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm_record import (
    CLUSTER,
    KUBELET,
    RecordError,
    connect,
    read,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm_sync import COMPONENTS
from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import read_text


def main():
    module = AnsibleModule(
        argument_spec=dict(
            manifests_dir=dict(type="path", default="/etc/kubernetes/manifests"),
            kubeadm_config=dict(type="path", default=""),
            record=dict(type="str", default="auto", choices=["auto", "always", "never"]),
            kubeconfig=dict(type="path", default="/etc/kubernetes/admin.conf"),
            kubelet_config=dict(type="path", default="/var/lib/kubelet/config.yaml"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        import yaml
    except ImportError:
        module.fail_json(msg="kubeadm_drift needs PyYAML on the node (Debian/Ubuntu package python3-yaml)")
    sources = []  # (label, ClusterConfiguration)
    kubelet_record = None
    try:
        text = read_text(p["kubeadm_config"]) if p["kubeadm_config"] else None
        if text is not None:
            sources.append((p["kubeadm_config"], cluster_configuration(list(yaml.safe_load_all(text)))))
        client = connect(yaml, p["record"], p["kubeconfig"])
        record = read(client, CLUSTER, p["record"]) if client else None
        if record is not None:
            sources.append((record.label, yaml.safe_load(record.text) or {}))
            kubelet = read(client, KUBELET, "auto")
            kubelet_record = (kubelet.label, yaml.safe_load(kubelet.text) or {}) if kubelet else None
    except (yaml.YAMLError, KubeadmError, RecordError, IOError, OSError) as exc:
        module.fail_json(msg="reading what kubeadm renders from: %s" % exc)
    drift = []
    for label, cfg in sources:
        for container, component in sorted(COMPONENTS.items()):
            path = os.path.join(p["manifests_dir"], container + ".yaml")
            manifest = read_text(path)
            if manifest is None:
                continue
            if component == "etcd" and (cfg.get("etcd") or {}).get("external"):
                continue
            try:
                found = component_drift(yaml.safe_load(manifest), container, cfg, component)
            except (yaml.YAMLError, PodError) as exc:
                module.fail_json(msg="%s: %s" % (path, exc))
            for d in found:
                d.update(component=container, source=label, message=describe(d, container, label))
            drift += found
    if kubelet_record is not None:
        config = read_text(p["kubelet_config"])
        if config is not None:
            try:
                found = kubelet_drift(yaml.safe_load(config), kubelet_record[1])
            except yaml.YAMLError as exc:
                module.fail_json(msg="%s: %s" % (p["kubelet_config"], exc))
            for d in found:
                d.update(component="kubelet", source=kubelet_record[0],
                         message=describe(d, "kubelet", kubelet_record[0]).replace("kubeadm upgrade",
                                                                                   "kubeadm upgrade node", 1))
            drift += found
    module.exit_json(changed=False, sources=[s[0] for s in sources] + ([kubelet_record[0]] if kubelet_record else []),
                     drift=drift)


if __name__ == "__main__":
    main()
