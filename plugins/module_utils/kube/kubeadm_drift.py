# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: where a node runs something kubeadm would not render - what `kubeadm upgrade` (or `kubeadm join`, or an
external etcd host's `kubeadm init phase etcd local`) would revert.

For each static pod kubeadm renders (kube-apiserver, kube-controller-manager, kube-scheduler, etcd), the container's
flags are compared with the ClusterConfiguration kubeadm renders it from: every flag the collection tunes, and every
extraArg the configuration carries (for etcd, --data-dir with etcd.local.dataDir, kubeadm's /var/lib/etcd when unset).
For the kubelet, the node's configuration file with kubeadm's record of it, for the pull settings. Each difference is
one drift: what the node has, what kubeadm has.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm import get_args
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.static_pod import (
    PodError,
    find_container,
    flag_values,
)

# The flags this collection sets, by kubeadm component: missing from kubeadm's configuration, each is reverted.
TUNED = {
    "apiServer": ("etcd-servers-overrides", "max-requests-inflight", "max-mutating-requests-inflight"),
    "controllerManager": (),
    "scheduler": ("config",),
    "etcd": ("data-dir", "quota-backend-bytes"),
}
KUBELET_TUNED = ("serializeImagePulls", "maxParallelImagePulls")
DEFAULT_ETCD_DATA_DIR = "/var/lib/etcd"


def etcd_args(cfg):
    local = (cfg.get("etcd") or {}).get("local") or {}
    args = get_args({"etcd": local}, "etcd")
    args.setdefault("data-dir", local.get("dataDir") or DEFAULT_ETCD_DATA_DIR)
    return args


def component_drift(pod, container_name, cfg, component):
    """[dict(setting, node, kubeadm)] for one manifest against the ClusterConfiguration `cfg`."""
    container = find_container(pod, container_name)
    flags = flag_values(container.get("command") or container.get("args") or [])
    want = etcd_args(cfg) if component == "etcd" else get_args(cfg, component)
    out = []
    for name in sorted(set(TUNED[component]) | set(want)):
        node, kubeadm = flags.get("--" + name), want.get(name)
        if node != kubeadm:
            out.append(dict(setting="--" + name, node=node, kubeadm=kubeadm))
    return out


def kubelet_drift(config, record):
    """[dict(setting, node, kubeadm)] of the kubelet's pull settings: the node's file against kubeadm's record."""
    out = []
    for key in KUBELET_TUNED:
        node, kubeadm = (config or {}).get(key), (record or {}).get(key)
        if node != kubeadm:
            out.append(dict(setting=key, node=node, kubeadm=kubeadm))
    return out


def describe(drift, component, source):
    """One drift in an operator's words."""
    return "kubeadm upgrade would revert %s %s: %s has %s, %s has %s" % (
        component, drift["setting"], "the node", _shown(drift["node"]), source, _shown(drift["kubeadm"]))


def _shown(value):
    return "nothing" if value is None else repr(value) if not isinstance(value, str) else value


__all__ = ["PodError", "TUNED", "component_drift", "kubelet_drift", "describe"]
