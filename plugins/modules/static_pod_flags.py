#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: static_pod_flags
short_description: Set command-line flags and hostPath volumes of a static pod manifest (kubeadm's), as YAML data
version_added: "0.4.0"
description:
  - Parses the manifest as YAML, sets each of O(flags) as C(--flag=value) in the container's C(command) list (in
    place, keeping every other argument and its order; a new flag is appended; C(null) removes it), and rewrites the
    file atomically only when the data changed.
  - Points each of O(host_paths) (a hostPath volume by name) at a new host directory; the container's
    C(volumeMounts) stay, so the container sees the same path (how a kubeadm etcd member's data moves to another disk).
  - With neither O(flags) nor O(host_paths) it only reads, and returns the container's flags and volumes.
  - The temp file is a dot file in the manifest's directory, which the kubelet ignores, and the rename makes the
    kubelet see the old or the new manifest, never half of one.
  - An unparsable file, a file that is not a Pod, or a missing container fails without touching the file.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  path:
    description: The manifest (for example C(/etc/kubernetes/manifests/kube-apiserver.yaml)).
    type: path
    required: true
  container:
    description: The container's name; the first container when empty.
    type: str
    default: ""
  flags:
    description: C(--flag) to value; C(null) removes the flag.
    type: dict
    default: {}
  host_paths:
    description:
      - hostPath volume name to its new absolute host path. A name that is not a hostPath volume of the Pod fails
        before anything is written.
    type: dict
    default: {}
extends_documentation_fragment:
  - kubescale.tuning.attributes
attributes:
  check_mode:
    support: full
    details: Parses and merges as in a real run and reports the same changed flags; writes nothing.
  diff_mode:
    support: full
    details: Shows the manifest's text before and after.
  platform:
    platforms: posix
requirements:
  - PyYAML on the node (Debian/Ubuntu package python3-yaml).
"""

EXAMPLES = r"""
- name: Events to their own etcd cluster
  kubescale.tuning.static_pod_flags:
    path: /etc/kubernetes/manifests/kube-apiserver.yaml
    container: kube-apiserver
    flags:
      --etcd-servers-overrides: /events#https://10.0.0.7:2383;https://10.0.0.8:2383;https://10.0.0.9:2383

- name: Move a kubeadm etcd member's data volume (the container keeps --data-dir=/var/lib/etcd)
  kubescale.tuning.static_pod_flags:
    path: /etc/kubernetes/manifests/etcd.yaml
    container: etcd
    flags:
      --quota-backend-bytes: "8589934592"
    host_paths:
      etcd-data: /mnt/local-ssd/etcd

- name: Read the member's flags and volumes
  kubescale.tuning.static_pod_flags:
    path: /etc/kubernetes/manifests/etcd.yaml
    container: etcd
  register: etcd_pod
"""

RETURN = r"""
changed_flags:
  description: The flags that were (or in check mode would be) added, changed or removed.
  returned: always
  type: list
  elements: str
  sample: [--etcd-servers-overrides]
previous:
  description: Each changed flag's value before (null when it was not set).
  returned: always
  type: dict
changed_host_paths:
  description: The hostPath volumes that were (or in check mode would be) pointed elsewhere.
  returned: always
  type: list
  elements: str
previous_host_paths:
  description: Each changed volume's host path before.
  returned: always
  type: dict
flags:
  description: The container's C(--flag) values after the change (a bare flag has null).
  returned: always
  type: dict
  sample: {"--data-dir": /var/lib/etcd, "--name": cp-1}
volumes:
  description: The Pod's hostPath volumes after the change, with where the container mounts each (null when it does not).
  returned: always
  type: list
  elements: dict
  sample: [{name: etcd-data, host_path: /mnt/local-ssd/etcd, mount_path: /var/lib/etcd}]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils._static_pod import (
    PodError,
    check_flag,
    find_container,
    flag_values,
    set_flags,
    set_host_paths,
    volumes,
)
from ansible_collections.kubescale.tuning.plugins.module_utils._yamledit import finish, string_values, yaml_and_text


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            container=dict(type="str", default=""),
            flags=dict(type="dict", default={}),
            host_paths=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    flags = string_values(module, "flags", "flag", allow_empty=True)
    host_paths = string_values(module, "host_paths", "volume", allow_empty=True)
    for name, value in host_paths.items():
        if value is None or not value.startswith("/"):
            module.fail_json(msg="host_paths: %s must be an absolute path, got %r" % (name, value))
    for name in flags:
        try:
            check_flag(name)
        except PodError as exc:
            module.fail_json(msg="flags: %s" % exc)
    yaml, text = yaml_and_text(module, "static_pod_flags")
    try:
        pod = yaml.safe_load(text)
        container = find_container(pod, module.params["container"])
        argv = container.get("command")
        key = "command"
        if not argv:
            argv, key = container.get("args") or [], "args"
        before = flag_values(argv)
        old_paths = dict((v["name"], v["host_path"]) for v in volumes(pod, container))
        new_argv, changed = set_flags(argv, flags)
        changed_paths = set_host_paths(pod, host_paths)
    except (yaml.YAMLError, PodError) as exc:
        module.fail_json(msg="path: %s: %s; the file was not changed" % (path, exc))
    container[key] = new_argv
    result = dict(changed_flags=changed, previous=dict((f, before.get(f)) for f in changed),
                  changed_host_paths=changed_paths, previous_host_paths=dict((v, old_paths[v]) for v in changed_paths),
                  flags=flag_values(new_argv), volumes=volumes(pod, container))
    if not changed and not changed_paths:
        module.exit_json(changed=False, **result)
    new_text = yaml.safe_dump(pod, default_flow_style=False, sort_keys=False)
    finish(module, text, new_text, result)


if __name__ == "__main__":
    main()
