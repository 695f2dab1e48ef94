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
short_description: Set command-line flags and hostPath volumes of a static pod manifest (kubeadm's), as YAML data, and where kubeadm renders it from
version_added: "0.4.0"
description:
  - Parses the manifest as YAML, sets each of O(flags) as C(--flag=value) in the container's C(command) list (in
    place, keeping every other argument and its order; a new flag is appended; C(null) removes it), and rewrites the
    file atomically only when the data changed.
  - Points each of O(host_paths) (a hostPath volume by name) at a new host directory, and moves the container's mount
    of each of O(mount_paths); a kubeadm etcd member's data moves to another disk with C(--data-dir), the data
    volume's host path and its mount set to the same directory, as kubeadm renders C(etcd.local.dataDir).
  - With O(kubeadm), the same flags go where kubeadm renders the manifest from (a kubeadm configuration file, kubeadm's
    record in the cluster), in the component's C(extraArgs) (for etcd C(etcd.local.extraArgs), and C(--data-dir) as
    C(etcd.local.dataDir)), planned and checked before the manifest is written.
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
  mount_paths:
    description:
      - Volume name to the new absolute path the container mounts it at. A volume the container does not mount fails
        before anything is written.
    type: dict
    default: {}
  restart_wait:
    description:
      - When the manifest changed, wait until the kubelet runs a new process of the container's command and O(restart_wait.url)
        answers C(ok), before the call returns (and before kubeadm's record is written); otherwise the manifest is put
        back as it was and the call fails. With a rollout one node at a time, the next node's component restarts only
        once this one answers again.
      - Empty, the call returns once the manifest is written.
    type: dict
    suboptions:
      url:
        description:
          - The component's readiness endpoint on this node (its own certificate is not verified, only its answer is
            read). C({secure_port}) in it is the container's C(--secure-port) (6443 when it has none).
        type: str
        default: https://127.0.0.1:{secure_port}/readyz
      timeout:
        description: Seconds to wait.
        type: int
        default: 180
extends_documentation_fragment:
  - kubescale.tuning.attributes
  - kubescale.tuning.kubeadm
attributes:
  check_mode:
    support: full
    details: >-
      Parses and merges as in a real run and reports the same changed flags; kubeadm's validation and the record's
      dry run run too; writes nothing.
  diff_mode:
    support: full
    details: Shows the manifest's text before and after, and each kubeadm configuration's that changes.
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

- name: Move a kubeadm etcd member's data to the SSD and raise its quota, in kubeadm's record too
  kubescale.tuning.static_pod_flags:
    path: /etc/kubernetes/manifests/etcd.yaml
    container: etcd
    flags:
      --data-dir: /mnt/local-ssd/etcd
      --quota-backend-bytes: "8589934592"
    host_paths:
      etcd-data: /mnt/local-ssd/etcd
    mount_paths:
      etcd-data: /mnt/local-ssd/etcd
    kubeadm:
      record: auto

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
changed_mount_paths:
  description: The volumes whose mount was (or in check mode would be) moved.
  returned: always
  type: list
  elements: str
reordered:
  description: Whether the manifest's flags, volumes or mounts were (or would be) put in the order kubeadm renders them.
  returned: always
  type: bool
kubeadm:
  description: Where kubeadm renders from, found (C(sources)) and changed (C(changed)) - a file's path, or the record.
  returned: always
  type: dict
  sample: {sources: ["ConfigMap kube-system/kubeadm-config (ClusterConfiguration)"], changed: []}
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

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm import set_args, set_etcd_local
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm_sync import (
    ARGUMENT_SPEC as KUBEADM_SPEC,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm_sync import (
    COMPONENTS,
    SyncError,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm_sync import plan as kubeadm_plan
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.static_pod import (
    PodError,
    answers_ok,
    check_flag,
    find_container,
    flag_values,
    kubeadm_order,
    set_flags,
    set_host_paths,
    set_mount_paths,
    uptime_ticks,
    volumes,
    wait_restarted,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import atomic_write
from ansible_collections.kubescale.tuning.plugins.module_utils.node.yamledit import string_values, yaml_and_text


def kubeadm_edit(component, flags):
    """The edit of a ClusterConfiguration that sets `flags` as kubeadm renders them for `component`."""
    args = dict((name[2:], value) for name, value in flags.items())

    def edit(cfg):
        if component == "etcd":
            data_dir = args.pop("data-dir", None)
            set_etcd_local(cfg, data_dir, args)
        else:
            set_args(cfg, component, args)
    return edit


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            container=dict(type="str", default=""),
            flags=dict(type="dict", default={}),
            host_paths=dict(type="dict", default={}),
            mount_paths=dict(type="dict", default={}),
            restart_wait=dict(type="dict", options=dict(
                url=dict(type="str", default="https://127.0.0.1:{secure_port}/readyz"),
                timeout=dict(type="int", default=180))),
            kubeadm=KUBEADM_SPEC,
        ),
        supports_check_mode=True,
    )
    p = module.params
    path = p["path"]
    flags = string_values(module, "flags", "flag", allow_empty=True)
    host_paths = string_values(module, "host_paths", "volume", allow_empty=True)
    mount_paths = string_values(module, "mount_paths", "volume", allow_empty=True)
    for option, paths in (("host_paths", host_paths), ("mount_paths", mount_paths)):
        for name, value in paths.items():
            if value is None or not value.startswith("/"):
                module.fail_json(msg="%s: %s must be an absolute path, got %r" % (option, name, value))
    for name in flags:
        try:
            check_flag(name)
        except PodError as exc:
            module.fail_json(msg="flags: %s" % exc)
    yaml, text = yaml_and_text(module, "static_pod_flags")
    try:
        pod = yaml.safe_load(text)
        container = find_container(pod, p["container"])
        argv = container.get("command")
        key = "command"
        if not argv:
            argv, key = container.get("args") or [], "args"
        before = flag_values(argv)
        old_paths = dict((v["name"], v["host_path"]) for v in volumes(pod, container))
        new_argv, changed = set_flags(argv, flags)
        changed_paths = set_host_paths(pod, host_paths)
        changed_mounts = set_mount_paths(container, mount_paths)
    except (yaml.YAMLError, PodError) as exc:
        module.fail_json(msg="path: %s: %s; the file was not changed" % (path, exc))
    container[key] = new_argv
    sync, reordered = None, False
    if p["kubeadm"].get("config") or p["kubeadm"].get("record") != "never":
        component = COMPONENTS.get(container.get("name"))
        if component is None:
            module.fail_json(msg="kubeadm: container %r is none of kubeadm's components (%s); nothing was changed"
                             % (container.get("name"), ", ".join(sorted(COMPONENTS))))
        try:
            sync = kubeadm_plan(yaml, module.run_command, module.get_bin_path("kubeadm"), p["kubeadm"],
                                kubeadm_edit(component, flags) if flags else (lambda cfg: None))
        except SyncError as exc:
            module.fail_json(msg="kubeadm: %s. Nothing was changed." % exc)
        names = sync.extra_names(component)
        reordered = names is not None and kubeadm_order(pod, container, key, names)
    new_text = yaml.safe_dump(pod, default_flow_style=False, sort_keys=False)
    result = dict(changed_flags=changed, previous=dict((f, before.get(f)) for f in changed),
                  changed_host_paths=changed_paths, previous_host_paths=dict((v, old_paths[v]) for v in changed_paths),
                  changed_mount_paths=changed_mounts, reordered=reordered, flags=flag_values(container[key]), volumes=volumes(pod, container),
                  kubeadm=dict(sources=sync.labels if sync else [], changed=sync.changed if sync else []))
    manifest_changed = bool(changed or changed_paths or changed_mounts or reordered)
    if module._diff:
        diffs = [dict(before=text, after=new_text, before_header=path, after_header=path)] if manifest_changed else []
        result["diff"] = diffs + (sync.diffs() if sync else [])
    if not manifest_changed and not (sync and sync.changed):
        module.exit_json(changed=False, **result)
    if not module.check_mode:
        try:
            if manifest_changed:
                written_at = uptime_ticks()
                atomic_write(path, new_text, mode=0o600)
                wait = p["restart_wait"] or {}
                url = wait and wait["url"].replace("{secure_port}", flag_values(container[key]).get("--secure-port")
                                                   or "6443")
                why = wait and wait_restarted(os.path.basename(str(container[key][0])), written_at, answers_ok(url),
                                              wait["timeout"])
                if why:
                    atomic_write(path, text, mode=0o600)
                    module.fail_json(msg="%s within %ds of the manifest's change (%s): %s was put back as it was, and "
                                         "the kubelet runs the old one again" % (why, wait["timeout"], url, path),
                                     **result)
            if sync:
                sync.write()
        except (IOError, OSError) as exc:
            module.fail_json(msg="path: writing %s failed: %s" % (path, exc), **result)
        except SyncError as exc:
            module.fail_json(msg="kubeadm: %s. The manifest %s is written: run again to record it." % (exc, path),
                             **result)
    module.exit_json(changed=True, **result)


if __name__ == "__main__":
    main()
