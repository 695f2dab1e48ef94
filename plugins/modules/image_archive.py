#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: image_archive
short_description: Save many container images into one archive, or load one idempotently by digest
version_added: "0.3.0"
description:
  - O(state=saved) exports O(images) from docker (C(docker save)) or containerd (C(ctr images export)) into ONE
    archive, so layers the images share are stored once, compressed with zstd, gzip or not at all. The archive
    is written to a temporary file in the same directory, fsynced and renamed; a sidecar C(<path>.json) records
    the image references, their IDs (config digests) and manifest digests, the size and the sha256 of the
    archive. Nothing is written when the archive already holds exactly those images.
  - The archive is the runtime's own export with one member added at its head, C(kubescale-index.json), so
    deciding what to load decompresses a few KiB and no layer bytes. C(docker load) and C(ctr images import)
    ignore that member. Archives without it (a plain C(docker save)) are read to the end to find their
    manifest.
  - O(state=loaded) compares the archive's images with the runtime's store by digest and loads only when one is
    missing or points elsewhere. Before loading it checks the sha256 of the whole archive (O(checksum), else
    the sidecar) and free space in the runtime's store, so a corrupt or truncated archive fails with the store
    untouched. The archive is streamed through its decompressor into C(docker load) or C(ctr images import),
    never held in memory.
  - The same file serves as the boot-time loader of the image_preload role (no Ansible on the node needed).
  - O(state=placed) loads nothing, as the archive is on the node for its boot-time loader (an image being baked, where
    no runtime runs). Only O(node_state) is applied.
  - With O(state=loaded) or O(state=placed), O(node_state) (the rest of the tuning - the archive's sidecar, the
    boot-time loader and its unit, the role's fact) is applied once the load succeeded, so one call owns the whole
    tuning on a node that holds its archive.
  - With O(only_if_placed), the same call first asks whether the node holds the archive at all, and with
    O(pause_image) whether its kubelet and runtime name that pause image - what M(kubescale.tuning.image_archive_info)
    reads - so a converged node costs one call, not a read and then a load.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  state:
    description:
      - Whether to write the archive from the runtime's store (V(saved)), load the archive into it (V(loaded)), or
        only keep it on the node for the boot-time loader (V(placed)).
    type: str
    choices: [saved, loaded, placed]
    default: loaded
  path:
    description:
      - The archive, an absolute path. Its directory must exist (in check mode it may be missing, as an earlier task
        of the run creates it). The sidecar is O(path) + C(.json).
    type: str
    required: true
  images:
    description:
      - Image references to save, C([registry/]name[:tag]) (a missing tag means C(latest); C(pause:3.9) is
        C(docker.io/library/pause:3.9)). Required, and only used, with O(state=saved).
      - Every image must be in the runtime's store.
    type: list
    elements: str
  runtime:
    description: The runtime whose store is read or written.
    type: str
    choices: [docker, containerd]
    default: docker
  namespace:
    description: The containerd namespace (the kubelet's CRI images live in C(k8s.io)).
    type: str
    default: k8s.io
  compression:
    description: How O(state=saved) compresses the archive. O(state=loaded) detects it from the file.
    type: str
    choices: [zstd, gzip, none]
    default: zstd
  compression_level:
    description: zstd level 1-19 (default 3) or gzip level 1-9 (default 6).
    type: int
  checksum:
    description:
      - The sha256 the archive must have before O(state=loaded) loads it (C(sha256:<hex>) or C(<hex>)).
      - When omitted the sidecar's is used; with neither, a load fails.
    type: str
  pin:
    description:
      - With O(runtime=containerd), label every loaded image C(io.cri-containerd.pinned=pinned) so the kubelet's
        image garbage collection never removes it. Docker has no pinned images.
    type: bool
    default: false
  store_path:
    description:
      - containerd's root, for the free-space check before a load (docker's comes from C(docker info)).
    type: path
    default: /var/lib/containerd
  only_if_placed:
    description:
      - With O(state=loaded) or O(state=placed), when the sidecar beside O(path) does not name the archive of
        O(checksum) (required with this) because the node has no archive yet, or another one, change nothing, apply no
        O(node_state), and return RV(placed=false). The caller places the archive and its sidecar, then calls again
        without this option.
      - The sidecar is written after the archive, so a sidecar naming O(checksum) means the archive was placed whole.
    type: bool
    default: false
extends_documentation_fragment:
  - kubescale.tuning.attributes
  - kubescale.tuning.checks
  - kubescale.tuning.pause_check
  - kubescale.tuning.node_state.nested
attributes:
  action:
    support: full
    description:
      - An action plugin evaluates O(checks) on the controller first, then runs the module, sending
        O(node_state.files[].src) by hash, its text only to a node whose copy differs.
  check_mode:
    support: full
    details:
      - A missing archive is reported as a load to come (an earlier task of the run places it).
      - Reads the archive's index and the store, verifies the sha256 and free space when a load is due, and reports
        what would be saved, loaded or pinned without writing or loading anything; predicts O(node_state).
  diff_mode:
    support: full
    details:
      - The archive's images as the store (or the archive) holds them before and after, one C(ref id) per line;
        O(node_state)'s changes.
  platform:
    platforms: posix
requirements:
  - docker, or containerd's ctr, on the node (not for O(state=placed)); zstd or gzip for compressed archives.
"""

EXAMPLES = r"""
- name: Save the pause image and the common images into one archive on the builder
  kubescale.tuning.image_archive:
    state: saved
    path: /opt/kubescale/images/preload.tar.zst
    images:
      - registry.k8s.io/pause:3.9
      - contoso.azurecr.io/base/python:3.11
    runtime: docker

- name: Load it into containerd's k8s.io namespace, pinned, checked against a known sha256
  kubescale.tuning.image_archive:
    state: loaded
    path: /opt/kubescale/images/preload.tar.zst
    runtime: containerd
    pin: true
    checksum: "sha256:{{ preload_sha256 }}"

- name: Load it and record what was loaded, in the same call
  kubescale.tuning.image_archive:
    state: loaded
    path: /opt/kubescale/images/preload.tar.zst
    checksum: "sha256:{{ preload_sha256 }}"
    node_state:
      fact:
        name: kubescale_image_preload
        data:
          sha256: "{{ preload_sha256 }}"

- name: On a node that holds the archive, check its pause image and load; elsewhere only say it is not placed
  kubescale.tuning.image_archive:
    path: /opt/kubescale/images/preload.tar.zst
    checksum: "sha256:{{ preload_sha256 }}"
    only_if_placed: true
    pause_image: registry.k8s.io/pause:3.9
    pause_sources: [/var/lib/kubelet/kubeadm-flags.env]
    fail_on_conflict: true
  register: preload

- name: Copy the archive (then its sidecar) to the nodes that lack it, and load it there
  when: not preload.placed
  block:
    - name: Copy the archive
      ansible.builtin.copy:
        src: preload.tar.zst
        dest: /opt/kubescale/images/preload.tar.zst
        mode: "0644"
    - name: Copy its sidecar
      ansible.builtin.copy:
        src: preload.tar.zst.json
        dest: /opt/kubescale/images/preload.tar.zst.json
        mode: "0644"
    - name: Load it
      kubescale.tuning.image_archive:
        path: /opt/kubescale/images/preload.tar.zst
        checksum: "sha256:{{ preload_sha256 }}"
"""

RETURN = r"""
archive:
  description: The archive's path.
  returned: always
  type: str
runtime:
  description: The runtime whose store was read or written.
  returned: always
  type: str
images:
  description: Every image of the archive with what this run did to it (saved, kept, loaded).
  returned: always
  type: list
  elements: dict
  sample: [{ref: registry.k8s.io/pause:3.9, id: "sha256:e6f1...", manifest: null, action: kept}]
loaded:
  description: References loaded (or, in check mode, that would be).
  returned: always
  type: list
  elements: str
kept:
  description: References already in the store with the archive's digest (or kept in an unchanged archive).
  returned: always
  type: list
  elements: str
pinned:
  description: References labelled pinned by this run (containerd).
  returned: always
  type: list
  elements: str
bytes_read:
  description:
    - Archive bytes this run read. A load reads the file twice (sha256, then the load); a run with nothing to
      load reads only the index at the archive's head, a few KiB and no layer bytes.
  returned: always
  type: int
sha256:
  description: The archive's sha256 (null when a load was not needed, so the archive was not hashed).
  returned: always
  type: str
size:
  description: The archive's size in bytes.
  returned: always
  type: int
sidecar:
  description: The sidecar's path.
  returned: always
  type: str
placed:
  description:
    - False only with O(only_if_placed), when the node's sidecar does not name the archive of O(checksum); then nothing
      was done. True when the call went on.
  returned: with O(state=loaded) or O(state=placed)
  type: bool
pause_conflicts:
  description: C(<file> names <image>) for each of O(pause_sources) naming another pause image than O(pause_image).
  returned: with O(state=loaded) or O(state=placed)
  type: list
  elements: str
node_state:
  description: What O(node_state) changed (in check mode, would), as M(kubescale.tuning.node_state) returns it.
  returned: with O(state=loaded) or O(state=placed)
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

from ansible_collections.kubescale.tuning.plugins.module_utils.images.archive import (
    ensure_loaded,
    save,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.images.compression import (
    detect_compression,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.images.files import (
    ArchiveError,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.images.index import (
    read_index,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.images.node import (
    PAUSE_ARGUMENT_SPEC,
    holds,
    pause_check,
    validate_pause,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.images.ref import (
    normalize_ref,
    parse_sha256,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.images.sidecar import (
    read_sidecar,
    sidecar_path,
    sidecar_text,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.images.store import (
    Runner,
    Store,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import atomic_write, read_text
from ansible_collections.kubescale.tuning.plugins.module_utils.node.checks import CHECKS_ARGUMENT_SPEC
from ansible_collections.kubescale.tuning.plugins.module_utils.node.state import (
    NODE_STATE_ARGUMENT_SPEC,
    finish,
    nested_spec,
    require_content,
)

LEVELS = {"zstd": (1, 19, 3), "gzip": (1, 9, 6), "none": (0, 0, 0)}


def lines(images, key_of):
    return "".join("%s %s\n" % (ref, key_of(ref)) for ref in sorted(images))


def validate(module):
    """Every input checked before anything is read from or written to the node."""
    p = module.params
    if not os.path.isabs(p["path"]):
        module.fail_json(msg="path: must be an absolute path, got %r" % p["path"])
    if p["state"] == "saved":
        if not p["images"]:
            module.fail_json(msg="images: list at least one image reference to save")
        refs = []
        for ref in p["images"]:
            try:
                refs.append(normalize_ref(ref))
            except ValueError as exc:
                module.fail_json(msg="images: %s" % exc)
        low, high, default = LEVELS[p["compression"]]
        level = p["compression_level"] if p["compression_level"] is not None else default
        if p["compression"] != "none" and not low <= level <= high:
            module.fail_json(msg="compression_level: %s takes %d-%d, got %d" % (p["compression"], low, high, level))
        # In check mode an earlier task of the run may be about to create it.
        if not os.path.isdir(os.path.dirname(p["path"])) and not module.check_mode:
            module.fail_json(msg="path: directory %s does not exist" % os.path.dirname(p["path"]))
        return sorted(set(refs)), level
    if p["only_if_placed"] and p["checksum"] is None:
        module.fail_json(msg="only_if_placed: needs checksum, the sha256 the node's sidecar must name")
    if p["checksum"] is not None:
        try:
            parse_sha256(p["checksum"])
        except ValueError as exc:
            module.fail_json(msg="checksum: %s" % exc)
    if p["pin"] and p["runtime"] != "containerd":
        module.fail_json(msg="pin: docker has no pinned images; pin applies to runtime=containerd")
    validate_pause(module)
    return None, None


def validate_state(module):
    """The nested node_state, validated before anything is read or loaded; its files' content asked for now, or,
    with only_if_placed, once the node is known to hold the archive (a node that does not gets no text)."""
    p = module.params
    if p["state"] == "saved":
        for option in ("node_state", "only_if_placed", "pause_image"):
            if p[option]:
                module.fail_json(msg="%s: only with state=loaded or placed (a saved archive is a build artefact, "
                                     "not node state)" % option)
    return nested_spec(module, ask_content=not p["only_if_placed"])


def nothing_loaded(p):
    """The result of a call that read no archive and loaded nothing (state=placed, or only_if_placed on a node that
    does not hold the archive), in the shape of a load's."""
    return dict(changed=False, archive=p["path"], runtime=p["runtime"], images=[], loaded=[], kept=[], pinned=[],
                bytes_read=0, sha256=None, size=None, sidecar=sidecar_path(p["path"]))


def saved(module, store, refs, level):
    p = module.params
    path = p["path"]
    have = store.images()
    absent = [r for r in refs if r not in have]
    if absent:
        module.fail_json(msg="images: not in %s's store: %s (save needs them present: pull or build them first)"
                         % (store.runtime, ", ".join(absent)))
    key = "id" if store.runtime == "docker" else "manifest"
    want = dict((r, have[r][key]) for r in refs)
    sidecar = read_sidecar(path)
    current = None
    bytes_read = 0
    if sidecar and os.path.isfile(path) and sidecar.get("size") == os.path.getsize(path) \
            and sidecar.get("compression") == p["compression"] and detect_compression(path) == p["compression"]:
        try:
            index, bytes_read = read_index(path)
            current = dict((i["ref"], i.get(key)) for i in index["images"])
        except ArchiveError:
            current = None
    before = lines(current, current.get) if current else ""
    result = dict(archive=path, runtime=store.runtime, sidecar=sidecar_path(path), loaded=[], pinned=[],
                  bytes_read=bytes_read, diff=dict(before=before, after=lines(want, want.get)))
    if current == want:
        result.update(changed=False, kept=refs, sha256=sidecar["sha256"], size=sidecar["size"],
                      images=[dict(ref=r, id=have[r]["id"], manifest=have[r]["manifest"], action="kept") for r in refs])
        return result
    result.update(changed=True, kept=[], sha256=None, size=None,
                  images=[dict(ref=r, id=have[r]["id"], manifest=have[r]["manifest"], action="saved") for r in refs])
    if module.check_mode:
        return result
    doc = save(store, refs, path, p["compression"], level)
    text = sidecar_text(doc)
    if read_text(sidecar_path(path)) != text:
        atomic_write(sidecar_path(path), text)
    result.update(sha256=doc["sha256"], size=doc["size"],
                  images=[dict(ref=i["ref"], id=i["id"], manifest=i["manifest"], action="saved") for i in doc["images"]])
    return result


def loaded(module, store):
    p = module.params
    path = p["path"]
    if module.check_mode and not os.path.exists(path):
        # An earlier task of the same run places it (a copy predicted in check mode): every image would load.
        return dict(changed=True, archive=path, runtime=store.runtime, images=[], loaded=[], kept=[], pinned=[],
                    bytes_read=0, sha256=None, size=None, sidecar=sidecar_path(path),
                    msg="%s is not there yet: in a real run it is placed first, then loaded" % path)
    res = ensure_loaded(store, path, checksum=p["checksum"], pin=p["pin"], default_root=p["store_path"],
                        check=module.check_mode)
    key = "id" if store.runtime == "docker" else "manifest"
    have = store.images() if not module.check_mode and res["changed"] else None
    refs = [i["ref"] for i in res["images"]]
    archive_keys = dict((i["ref"], i.get(key) or i.get("id")) for i in res["images"])
    plan_have = dict((i["ref"], archive_keys[i["ref"]]) for i in res["images"] if i["action"] == "kept")
    before = "".join("%s %s\n" % (r, plan_have[r]) for r in sorted(plan_have))
    if have is not None:
        after = "".join("%s %s\n" % (r, have[r][key] or have[r]["id"]) for r in sorted(refs) if r in have)
    else:
        after = lines(archive_keys, archive_keys.get)
    res.update(diff=dict(before=before, after=after), sidecar=sidecar_path(path), size=os.path.getsize(path))
    return res


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", default="loaded", choices=["saved", "loaded", "placed"]),
            path=dict(type="str", required=True),
            images=dict(type="list", elements="str"),
            runtime=dict(type="str", default="docker", choices=["docker", "containerd"]),
            namespace=dict(type="str", default="k8s.io"),
            compression=dict(type="str", default="zstd", choices=["zstd", "gzip", "none"]),
            compression_level=dict(type="int"),
            checksum=dict(type="str"),
            pin=dict(type="bool", default=False),
            store_path=dict(type="path", default="/var/lib/containerd"),
            only_if_placed=dict(type="bool", default=False),
            node_state=NODE_STATE_ARGUMENT_SPEC,
            checks=CHECKS_ARGUMENT_SPEC,
            **PAUSE_ARGUMENT_SPEC
        ),
        supports_check_mode=True,
    )
    p = module.params
    refs, level = validate(module)
    state = validate_state(module)
    conflicts = []
    if p["state"] != "saved":
        conflicts = pause_check(module, archive=p["path"])
        if p["only_if_placed"]:
            if not holds(p["path"], p["checksum"]):
                module.exit_json(placed=False, pause_conflicts=conflicts, node_state=dict(changed_paths=[], actions=[]),
                                 **nothing_loaded(p))
            require_content(module, state)
    tool = "docker" if p["runtime"] == "docker" else "ctr"
    if p["state"] != "placed" and module.get_bin_path(tool) is None:
        module.fail_json(msg="runtime: %s is not installed on this node (%s not found)" % (p["runtime"], tool))
    store = Store(Runner(run=module.run_command), p["runtime"], p["namespace"])
    try:
        if p["state"] == "saved":
            result = saved(module, store, refs, level)
        elif p["state"] == "loaded":
            result = loaded(module, store)
        else:
            result = nothing_loaded(p)
    except ArchiveError as exc:
        module.fail_json(msg=str(exc))
    except (IOError, OSError) as exc:
        module.fail_json(msg="%s: %s" % (p["path"], exc))
    if not module._diff:
        result.pop("diff", None)
    if p["state"] != "saved":
        result.update(placed=True, pause_conflicts=conflicts)
        result = finish(module, state, result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
