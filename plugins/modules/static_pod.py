#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: static_pod
short_description: Stop or start a kubelet static pod by moving its manifest out of (or back into) the manifests dir
version_added: "0.4.0"
description:
  - The kubelet runs what is in its static pod directory (kubeadm's C(/etc/kubernetes/manifests)) and stops a pod
    whose manifest goes. O(state=stopped) renames the manifest into O(hold_dir), where it can be edited while the
    pod is down, and then waits until the pod's processes let go of O(wait_unlocked) (no file under those paths
    holds a lock in C(/proc/locks) - etcd locks its WAL and database files while it runs, so this is "the member has
    stopped writing", whatever the container runtime). O(state=started) renames it back; the kubelet starts the pod.
  - Renames are atomic, so the kubelet sees the whole manifest or none. O(hold_dir) must be on the manifest's
    filesystem (the default, a directory beside the manifests dir, is) and outside the manifests dir.
  - O(wait_unlocked) on btrfs fails before anything is moved (stat's device number there is not the one
    C(/proc/locks) shows, so its locks cannot be seen).
  - A manifest found in neither place fails, and so does one found in both (which copy is meant is not known); both
    fail before anything is moved.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  path:
    description: The manifest in the kubelet's static pod directory (for example C(/etc/kubernetes/manifests/etcd.yaml)).
    type: path
    required: true
  state:
    description: V(stopped) holds the manifest in O(hold_dir) and waits; V(started) puts it back.
    type: str
    choices: [started, stopped]
    default: started
  hold_dir:
    description: Where a stopped pod's manifest is kept (created with mode 0700). Default C(<manifests dir>/../kubescale-held).
    type: path
  wait_unlocked:
    description: With O(state=stopped), directories whose files the pod's processes lock while they run (etcd's data dir).
    type: list
    elements: path
    default: []
  timeout:
    description: Seconds to wait for O(wait_unlocked) (the kubelet's termination grace period is 30 s by default).
    type: int
    default: 120
extends_documentation_fragment:
  - kubescale.tuning.attributes
attributes:
  check_mode:
    support: full
    details: Reports the move a real run would make; moves and waits for nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
"""

EXAMPLES = r"""
- name: Stop the etcd static pod and wait until it let go of its data
  kubescale.tuning.static_pod:
    path: /etc/kubernetes/manifests/etcd.yaml
    state: stopped
    wait_unlocked: [/var/lib/etcd]
  register: etcd_pod

- name: Edit the held manifest while the pod is down
  kubescale.tuning.static_pod_flags:
    path: "{{ etcd_pod.held }}"
    container: etcd
    flags:
      --quota-backend-bytes: "8589934592"

- name: Start it again
  kubescale.tuning.static_pod:
    path: /etc/kubernetes/manifests/etcd.yaml
    state: started
"""

RETURN = r"""
held:
  description: Where the manifest is kept while the pod is stopped.
  returned: always
  type: str
  sample: /etc/kubernetes/kubescale-held/etcd.yaml
running:
  description: Whether the manifest is (or in check mode would be) in the static pod directory.
  returned: always
  type: bool
waited:
  description: Seconds spent waiting for O(wait_unlocked).
  returned: always
  type: float
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.kube.static_pod import (
    LOCKS_UNSEEN_FS,
    fs_type,
    locked_files,
    parse_locks,
)


def read_locks():
    try:
        with open("/proc/locks") as f:
            return parse_locks(f.read())
    except (IOError, OSError):
        return set()


def rename(module, src, dest):
    try:
        os.rename(src, dest)
        dfd = os.open(os.path.dirname(dest), os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError as exc:
        module.fail_json(msg="moving %s to %s failed: %s (hold_dir must be on the manifest's filesystem)"
                         % (src, dest, exc))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            state=dict(type="str", default="started", choices=["started", "stopped"]),
            hold_dir=dict(type="path"),
            wait_unlocked=dict(type="list", elements="path", default=[]),
            timeout=dict(type="int", default=120),
        ),
        supports_check_mode=True,
    )
    path = os.path.normpath(module.params["path"])
    manifests = os.path.dirname(path)
    hold_dir = os.path.normpath(module.params["hold_dir"] or os.path.join(os.path.dirname(manifests), "kubescale-held"))
    if hold_dir == manifests or hold_dir.startswith(manifests + os.sep):
        module.fail_json(msg="hold_dir: %s is inside the static pod directory %s, where the kubelet would run it"
                         % (hold_dir, manifests))
    if module.params["timeout"] < 1:
        module.fail_json(msg="timeout: %d must be 1 or more seconds" % module.params["timeout"])
    for p in module.params["wait_unlocked"]:
        if not os.path.isabs(p):
            module.fail_json(msg="wait_unlocked: %s is not an absolute path" % p)
    if module.params["state"] == "stopped" and module.params["wait_unlocked"]:
        try:
            with open("/proc/self/mountinfo") as f:
                mountinfo = f.read()
        except (IOError, OSError):
            mountinfo = ""
        for p in module.params["wait_unlocked"]:
            kind = fs_type(os.path.realpath(p), mountinfo)
            if kind in LOCKS_UNSEEN_FS:
                module.fail_json(msg="wait_unlocked: %s is on %s, where /proc/locks cannot be matched to its files, so "
                                 "the wait could not tell when the pod let go of them; nothing was moved" % (p, kind))
    held = os.path.join(hold_dir, os.path.basename(path))
    here, away = os.path.exists(path), os.path.exists(held)
    if here and away:
        module.fail_json(msg="%s and %s both exist: keep the one the pod should run with and remove the other"
                         % (path, held), held=held)
    if not here and not away:
        module.fail_json(msg="path: %s does not exist, and no held copy at %s" % (path, held), held=held)
    state = module.params["state"]
    changed = (state == "stopped") == here
    result = dict(changed=changed, held=held, running=state == "started", waited=0.0)
    if module.check_mode:
        module.exit_json(**result)
    if changed and state == "stopped":
        if not os.path.isdir(hold_dir):
            os.makedirs(hold_dir, 0o700)
        rename(module, path, held)
    elif changed:
        rename(module, held, path)
    if state == "stopped" and module.params["wait_unlocked"]:
        start = time.time()
        deadline = start + module.params["timeout"]
        while True:
            busy = locked_files(module.params["wait_unlocked"], read_locks())
            if not busy:
                break
            if time.time() > deadline:
                module.fail_json(msg="the pod still locks %s after %ds (is the kubelet running it from elsewhere?); "
                                 "its manifest is held at %s" % (", ".join(busy[:5]), module.params["timeout"], held),
                                 **result)
            time.sleep(0.5)
        result["waited"] = round(time.time() - start, 2)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
