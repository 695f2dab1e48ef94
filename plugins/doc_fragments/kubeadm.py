# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """The `kubeadm` option of the modules that write a control plane component's settings where kubeadm renders
    its manifest from (kubescale.tuning.kubeadm)."""

    DOCUMENTATION = r"""
options:
  kubeadm:
    description:
      - Where kubeadm renders this component's manifest from, written in the same call as the manifest, so that
        C(kubeadm upgrade apply), C(kubeadm upgrade node) and C(kubeadm join --control-plane) keep the setting.
      - Each changed ClusterConfiguration is checked with the node's C(kubeadm config validate) and the record is
        sent as a server-side dry run before anything is written; the file and the record are written after the
        manifest, the record at the resourceVersion it was planned against.
      - The manifest's flags, volumes and mounts are put in the order kubeadm renders them (its own flags sorted,
        then the extraArgs in the ClusterConfiguration's order; volumes and mounts by name), so an upgrade finds
        the manifest equal and leaves the component running.
    type: dict
    default: {}
    suboptions:
      config:
        description:
          - A kubeadm configuration file on the node holding a ClusterConfiguration (what C(kubeadm init --config)
            or, on an external etcd host, C(kubeadm init phase etcd local --config) renders from); empty, or a file
            that does not exist, for none.
        type: path
        default: ""
      record:
        description:
          - kubeadm's record in the cluster, the ClusterConfiguration in the C(kube-system/kubeadm-config)
            ConfigMap (what C(kubeadm upgrade) renders from), through the API server with O(kubeadm.kubeconfig).
          - C(auto) writes it on a node that has O(kubeadm.kubeconfig) and a cluster that has the ConfigMap (a
            kubeadm control plane node), and skips it elsewhere; C(always) fails where it cannot; C(never) skips it.
        type: str
        default: never
        choices: [auto, always, never]
      kubeconfig:
        description: The kubeconfig the record is read and written with (kubeadm's admin.conf on control plane nodes).
        type: path
        default: /etc/kubernetes/admin.conf
"""
