#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: store_move
short_description: Merge a container runtime's configuration, moving its store when the change would hide it
version_added: "0.4.0"
description:
  - One transaction for docker (C(daemon.json), C(data-root)) and containerd (C(config.toml), C(root)). Merges
    O(settings) into O(config_path) as data, the way M(kubescale.tuning.config_merge) does (other keys kept).
  - When the merge changes where the store lives (the root, or docker's storage driver) and the old store holds data,
    O(policy) decides. V(copy) stops the running O(stop_units), then the runtime; copies the old store to O(root) with
    rsync after a free-space check and proves the copy whole; switches the configuration; starts the runtime; checks
    that it runs from O(root) (docker's C(DockerRootDir) and driver; containerd's main process holding its metadata
    database under O(root)) and still lists every image it listed before; then starts O(stop_units) again (each one's
    systemd start limit reset first; one that does not start fails the module, named).
  - For containerd, a running C(docker.service) is stopped with O(stop_units) and started again too, whatever
    O(stop_units) says - dockerd runs its containers through containerd, and left running it exits and is restarted by
    systemd until its start limit leaves it down.
  - On any failure in that sequence the old configuration is put back (a configuration the run created is removed),
    the runtime is restarted on the old store, which is never modified or deleted, and the module fails saying where
    the runtime runs now and how to go on. A copy of the old configuration stays beside it as
    C(<config_path>.kubescale-before-move) while the move runs, and after it when the runtime would not come back.
  - A move that died before its end (its controller killed with the node's processes, the node restarted) left that
    copy behind and the units it stopped stopped (it notes them in C(<config_path>.kubescale-move-stopped) before it
    stops them). The next call that finds the configuration and the runtime agreeing (nothing to move) starts those
    units again, each one's start limit reset first, and removes both notes. A next call that moves the store (the
    move died before its switch) starts them after its own move, with the units it stops itself.
  - A move's module goes on to its end when only its controller dies. So that a next call never plans or moves while
    such a module is still copying or switching, each call (not in check mode, with O(service)) holds a lock on the
    node for O(config_path) from before it reads the configuration to its exit, waiting up to O(lock_timeout) seconds
    for a holder; one that waits longer fails, having changed nothing.
  - V(fail) refuses such a change; V(empty) writes the configuration and lets the runtime start on an empty store
    (the old one is kept). A storage driver change cannot be copied (images on disk are per driver) and is refused
    with V(copy).
  - Everything is validated and planned before anything changes; without a store change only the file is written.
  - O(node_state) (the rest of the tuning - the runtime's unit enabled and started, the role's fact) is applied last,
    once the merge (and any move) succeeded, so one call owns the whole tuning. It is left undone when the module
    fails.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  runtime:
    description: The runtime, which sets the file format, the root key, the units and the image listing.
    type: str
    required: true
    choices: [docker, containerd]
  config_path:
    description: The runtime's configuration file.
    type: path
    required: true
  settings:
    description:
      - The keys to set (mappings merged recursively, C(null) removes a key), including the root key
        (C(data-root) or C(root)) with the value O(root).
    type: dict
    required: true
  root:
    description: Where the store is to live (the value of the root key in O(settings)).
    type: path
    required: true
  default_root:
    description: Where the runtime keeps its store when the file names none; C(/var/lib/docker) or C(/var/lib/containerd).
    type: path
  policy:
    description: What to do when the store would move and the old one holds data.
    type: str
    default: copy
    choices: [copy, empty, fail]
  stop_units:
    description: Units that use the runtime, stopped (when running) for a move and started again after it.
    type: list
    elements: str
    default: []
  service:
    description:
      - Whether systemd runs the runtime here. V(false) (an image bake) only writes the file, never moves.
    type: bool
    default: true
  namespace:
    description: The containerd namespace whose images are compared across a move.
    type: str
    default: k8s.io
  timeout:
    description: Seconds to wait for the runtime to answer from its store after a start.
    type: int
    default: 60
  lock_timeout:
    description:
      - Seconds to wait for another call's module still inside a move of this store (its controller died) before
        failing with nothing changed. A copy of a large store takes minutes.
    type: int
    default: 1800
  root_variable:
    description: The name failures give for the root (the role variable a user sets).
    type: str
    default: root
  policy_variable:
    description: The name failures give for the policy.
    type: str
    default: policy
extends_documentation_fragment:
  - kubescale.tuning.attributes
  - kubescale.tuning.node_state.nested
attributes:
  action:
    support: full
    description: An action plugin sends O(node_state.files[].src) by hash, its text only to a node whose copy differs.
  check_mode:
    support: full
    details: Plans the merge and the move, refuses what a real run would refuse, predicts O(node_state), and changes
      nothing.
  diff_mode:
    support: full
    details: The configuration file before and after, and O(node_state)'s changes.
  platform:
    platforms: posix
requirements:
  - systemd, rsync, and the runtime's client (docker, or containerd's ctr) on the node.
seealso:
  - module: kubescale.tuning.config_merge
  - module: kubescale.tuning.dir_sync
"""

EXAMPLES = r"""
- name: Docker's data-root onto the local SSD, its images copied over
  kubescale.tuning.store_move:
    runtime: docker
    config_path: /etc/docker/daemon.json
    settings:
      storage-driver: overlay2
      data-root: /mnt/local-ssd/docker
      max-concurrent-downloads: 10
    root: /mnt/local-ssd/docker
    stop_units: [kubelet.service]
    root_variable: docker_overlay2_data_root
    policy_variable: docker_overlay2_data_root_policy

- name: containerd's root onto the SSD (docker, a client of this containerd, stopped too)
  kubescale.tuning.store_move:
    runtime: containerd
    config_path: /etc/containerd/config.toml
    settings:
      version: 2
      root: /mnt/local-ssd/containerd
    root: /mnt/local-ssd/containerd
    stop_units: [kubelet.service, docker.service]

- name: The whole tuning in one call - daemon.json, docker enabled and started, the role's fact
  kubescale.tuning.store_move:
    runtime: docker
    config_path: /etc/docker/daemon.json
    settings:
      data-root: /mnt/local-ssd/docker
      max-concurrent-downloads: 10
    root: /mnt/local-ssd/docker
    node_state:
      units:
        - name: docker.service
          enabled: true
          state: started
      fact:
        name: kubescale_docker_overlay2
        data:
          data_root: /mnt/local-ssd/docker
"""

RETURN = r"""
restarted_after_interrupted_move:
  description: The units a move that died before its end had stopped, started again by this call (see the description).
  returned: when the module ran for real and did not move the store
  type: list
  elements: str
changed_keys:
  description: Dotted paths of the keys the merge adds, changes or removes (in check mode, would).
  returned: always
  type: list
  elements: str
  sample: [data-root, max-concurrent-downloads]
changed_top_keys:
  description: Each top-level key of RV(changed_keys), once; a reload or restart is decided from these.
  returned: always
  type: list
  elements: str
previous:
  description: The value each of RV(changed_keys) had before, null for a key that was not set.
  returned: always
  type: dict
config:
  description: The configuration as data, merged.
  returned: always
  type: dict
created:
  description: True when the run creates the configuration file.
  returned: always
  type: bool
was_active:
  description: Whether the runtime ran when the module started (false with O(service=false)).
  returned: always
  type: bool
old_root:
  description: Where the store was before.
  returned: always
  type: str
store_change:
  description: Whether the merge changes where the store lives.
  returned: always
  type: bool
moved:
  description: Whether the store was (in check mode, would be) copied to O(root); the runtime then runs the new file.
  returned: always
  type: bool
images:
  description: How many images the runtime listed before a move (each is on the new store); null when none was listed.
  returned: always
  type: int
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

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import atomic_write, read_text
from ansible_collections.kubescale.tuning.plugins.module_utils.node.confmerge import ConfError
from ansible_collections.kubescale.tuning.plugins.module_utils.node.state import (
    NODE_STATE_ARGUMENT_SPEC,
    finish,
    nested_spec,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.node.store_move import (
    RUNTIMES,
    MoveError,
    Runtime,
    decide,
    has_content,
    move,
    plan,
    recover,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.node.txlock import LockTimeout, hold, lock_path


def main():
    module = AnsibleModule(
        argument_spec=dict(
            runtime=dict(type="str", required=True, choices=sorted(RUNTIMES)),
            config_path=dict(type="path", required=True),
            settings=dict(type="dict", required=True),
            root=dict(type="path", required=True),
            default_root=dict(type="path"),
            policy=dict(type="str", default="copy", choices=["copy", "empty", "fail"]),
            stop_units=dict(type="list", elements="str", default=[]),
            service=dict(type="bool", default=True),
            namespace=dict(type="str", default="k8s.io"),
            timeout=dict(type="int", default=60),
            lock_timeout=dict(type="int", default=1800),
            root_variable=dict(type="str", default="root"),
            policy_variable=dict(type="str", default="policy"),
            node_state=NODE_STATE_ARGUMENT_SPEC,
        ),
        supports_check_mode=True,
    )
    p = module.params
    kind = RUNTIMES[p["runtime"]]
    path, root = p["config_path"], p["root"]
    default_root = p["default_root"] or kind["default_root"]
    for name, value in (("config_path", path), ("root", root), ("default_root", default_root)):
        if not os.path.isabs(value) or os.path.normpath(value) != value or value == "/":
            module.fail_json(msg="%s: %r must be an absolute, normalised path other than /" % (name, value))
    named = p["settings"].get(kind["root_key"])
    if named != root:
        module.fail_json(msg="settings: %s must be root (%s), got %r" % (kind["root_key"], root, named))
    for name in ("timeout", "lock_timeout"):
        if p[name] < 1:
            module.fail_json(msg="%s: must be 1 second or more, got %d" % (name, p[name]))
    if os.path.isdir(path):
        module.fail_json(msg="config_path: %s is a directory" % path)
    state = nested_spec(module)
    held = []  # the store's lock, held until the module exits
    if p["service"] and not module.check_mode:
        # A call whose controller died may still be moving this store on the node: wait for it, then read and plan.
        try:
            held.append(hold(lock_path("store-move", path), p["lock_timeout"]))
        except LockTimeout as exc:
            module.fail_json(msg="config_path: %s; nothing was changed" % exc)
    try:
        text = read_text(path)
        planned = plan(p["runtime"], text, p["settings"], root, default_root, path)
    except (IOError, OSError) as exc:
        module.fail_json(msg="config_path: cannot read %s: %s" % (path, exc))
    except ConfError as exc:
        module.fail_json(msg=str(exc))

    bins = dict(systemctl=module.get_bin_path("systemctl", required=p["service"]))
    if p["service"]:
        bins["docker" if p["runtime"] == "docker" else "ctr"] = module.get_bin_path(
            "docker" if p["runtime"] == "docker" else "ctr", required=True)
    rt = Runtime(p["runtime"], module.run_command, bins, namespace=p["namespace"])
    was_active = p["service"] and rt.active(kind["service"])
    content = planned["store_change"] and p["service"] and has_content(planned["old_root"])
    result = dict(changed_keys=planned["changed_keys"], changed_top_keys=planned["changed_top_keys"],
                  previous=planned["previous"], config=planned["config"], created=planned["created"],
                  was_active=was_active, old_root=planned["old_root"], store_change=planned["store_change"],
                  moved=False, images=None, changed=planned["new_text"] is not None)
    try:
        action = decide(p["runtime"], planned, p["policy"], content, p["service"], root, p["root_variable"],
                        p["policy_variable"])
    except MoveError as exc:
        module.fail_json(msg=str(exc), **result)
    if planned["new_text"] is not None and module._diff:
        result["diff"] = dict(before=text or "", after=planned["new_text"], before_header=path, after_header=path)
    result["moved"] = action == "move"
    if not module.check_mode and action == "move":
        rsync = module.get_bin_path("rsync", required=True)
        try:
            images = move(rt, planned, path, root, p["stop_units"], was_active,
                          p["settings"].get("storage-driver") if p["runtime"] == "docker" else None, p["timeout"],
                          p["root_variable"], p["policy_variable"], rsync=rsync)
        except MoveError as exc:
            result["moved"] = False
            module.fail_json(msg=str(exc), **result)
        result["images"] = None if images is None else len(images)
    elif not module.check_mode and action != "none":
        try:
            atomic_write(path, planned["new_text"], 0o644)
        except (IOError, OSError) as exc:
            module.fail_json(msg="config_path: cannot write %s: %s" % (path, exc), **result)
    result = finish(module, state, result)
    if p["service"] and action != "move" and not module.check_mode:
        # a move that died before its end: the runtime is started (node_state) on the root the configuration names
        try:
            result["restarted_after_interrupted_move"] = recover(rt, path)
        except MoveError as exc:
            module.fail_json(msg=str(exc), **result)
        result["changed"] = result["changed"] or bool(result["restarted_after_interrupted_move"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
