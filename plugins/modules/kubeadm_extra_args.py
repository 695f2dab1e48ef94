#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: kubeadm_extra_args
short_description: Set extraArgs of a control plane component in a kubeadm ClusterConfiguration file, as YAML data
version_added: "0.4.0"
description:
  - Parses the kubeadm configuration file (every YAML document in it), finds the one ClusterConfiguration, sets each
    of O(args) in the component's C(extraArgs) - a mapping up to C(kubeadm.k8s.io/v1beta3), a list of
    C(name)/C(value) items in C(v1beta4) - keeping every other document and key, and rewrites the file atomically
    only when the data changed.
  - For clusters whose control plane is (re)built from that file (C(kubeadm init --config), C(kubeadm upgrade)); the
    static pod manifests of a running control plane are set with M(kubescale.tuning.static_pod_flags).
  - An unparsable file, none or several ClusterConfiguration documents, or a bad argument name fail without touching
    the file.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  path:
    description: The kubeadm configuration file.
    type: path
    required: true
  component:
    description: The component whose extraArgs to set.
    type: str
    default: apiServer
    choices: [apiServer, controllerManager, scheduler]
  args:
    description: Argument name (no leading dashes) to value; C(null) removes it. Empty, the module only reads RV(args).
    type: dict
    default: {}
extends_documentation_fragment:
  - kubescale.tuning.attributes
attributes:
  check_mode:
    support: full
    details: Parses and merges as in a real run and reports the same changed arguments; writes nothing.
  diff_mode:
    support: full
    details: Shows the file's text before and after.
  platform:
    platforms: posix
requirements:
  - PyYAML on the node (Debian/Ubuntu package python3-yaml).
"""

EXAMPLES = r"""
- name: Events to their own etcd, for the next kubeadm init or upgrade
  kubescale.tuning.kubeadm_extra_args:
    path: /etc/kubernetes/kubeadm-config.yaml
    args:
      etcd-servers-overrides: /events#https://10.0.0.7:2383;https://10.0.0.8:2383;https://10.0.0.9:2383
"""

RETURN = r"""
changed_args:
  description: The arguments that were (or in check mode would be) added, changed or removed.
  returned: always
  type: list
  elements: str
previous:
  description: Each changed argument's value before (null when it was not set).
  returned: always
  type: dict
args:
  description: The component's extraArgs after the change, as name to value, whichever the layout.
  returned: always
  type: dict
  sample: {etcd-servers-overrides: "/events#https://10.0.0.5:2383"}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm import (
    KubeadmError,
    cluster_configuration,
    get_args,
    set_args,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.node.yamledit import finish, string_values, yaml_and_text


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            component=dict(type="str", default="apiServer", choices=["apiServer", "controllerManager", "scheduler"]),
            args=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    args = string_values(module, "args", "argument", allow_empty=True)
    yaml, text = yaml_and_text(module, "kubeadm_extra_args")
    component = module.params["component"]
    try:
        docs = list(yaml.safe_load_all(text))
        cfg = cluster_configuration(docs)
        before = get_args(cfg, component)
        changed = set_args(cfg, component, args)
        now = get_args(cfg, component)
    except (yaml.YAMLError, KubeadmError) as exc:
        module.fail_json(msg="path: %s: %s; the file was not changed" % (path, exc))
    result = dict(changed_args=changed, previous=dict((a, before.get(a)) for a in changed), args=now)
    if not changed:
        module.exit_json(changed=False, **result)
    new_text = yaml.safe_dump_all(docs, default_flow_style=False, sort_keys=False)
    finish(module, text, new_text, result)


if __name__ == "__main__":
    main()
