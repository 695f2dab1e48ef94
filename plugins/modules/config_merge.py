#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: config_merge
short_description: Merge settings into a JSON, YAML, TOML or environment file as data
version_added: "0.2.0"
description:
  - Parses the file, merges O(settings) into it (mappings key by key, recursively; any other value
    replaces; C(null) removes the key), and rewrites it atomically only when the data changed. Keys the
    settings do not name are kept, so a user's own keys in C(/etc/docker/daemon.json),
    C(/etc/containerd/config.toml) or C(/var/lib/kubelet/config.yaml) survive.
  - Returns the key paths that changed, so a role can reload a daemon for keys it rereads and restart it
    only for the others.
  - An unparsable file fails the task without touching it, naming the file and the parser's message.
  - With O(format=env) the file holds C(NAME="value") lines (systemd C(EnvironmentFile=), C(/etc/default));
    a mapping as a setting's value merges C(--flags) into that variable's command line, keeping the
    other flags.
  - Comments in YAML and TOML files are not kept when the file has to change (the data is).
author:
  - kubescale.tuning contributors (@kubescale)
options:
  path:
    description: The file. Its directory must exist.
    type: path
    required: true
  format:
    description: How the file is written.
    type: str
    required: true
    choices: [json, yaml, toml, env]
  settings:
    description:
      - The keys to set. Nested mappings address nested keys; C(null) removes a key.
      - For O(format=env), a mapping value is a set of C(--flag) to value (C(null) removes the flag).
    type: dict
    required: true
  create:
    description: Create the file when it is missing. With C(false) a missing file fails the task.
    type: bool
    default: true
  mode:
    description: Mode of a file this module creates (an existing file keeps its owner and mode).
    type: str
    default: "0644"
extends_documentation_fragment:
  - kubescale.tuning.attributes
attributes:
  check_mode:
    support: full
    details: Parses and merges as in a real run and reports the same changed key paths; writes nothing.
  diff_mode:
    support: full
    details: Shows the file's text before and after.
  platform:
    platforms: posix
requirements:
  - PyYAML on the node for O(format=yaml).
"""

EXAMPLES = r"""
- name: Docker pulls ten layers at once; other keys in daemon.json stay
  kubescale.tuning.config_merge:
    path: /etc/docker/daemon.json
    format: json
    settings:
      max-concurrent-downloads: 10
      log-opts:
        max-size: 100m
  register: daemon_json

- name: containerd's CRI plugin
  kubescale.tuning.config_merge:
    path: /etc/containerd/config.toml
    format: toml
    settings:
      plugins:
        io.containerd.grpc.v1.cri:
          max_concurrent_downloads: 10

- name: Add kubelet flags, keeping the flags already in KUBELET_EXTRA_ARGS
  kubescale.tuning.config_merge:
    path: /etc/default/kubelet
    format: env
    settings:
      KUBELET_EXTRA_ARGS:
        --image-pull-progress-deadline: 30m
"""

RETURN = r"""
changed_keys:
  description: Dotted key paths that were (or in check mode would be) added, changed or removed.
  returned: always
  type: list
  elements: str
  sample: [max-concurrent-downloads, log-opts.max-size]
changed_top_keys:
  description: The top-level keys among RV(changed_keys), each once.
  returned: always
  type: list
  elements: str
  sample: [max-concurrent-downloads, log-opts]
previous:
  description: For each of RV(changed_keys), its value before (null when it was not set).
  returned: always
  type: dict
  sample: {max-concurrent-downloads: null, data-root: /var/lib/docker}
config:
  description: The file's data after the merge.
  returned: always
  type: dict
created:
  description: Whether the file did not exist before.
  returned: always
  type: bool
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import atomic_write, read_text
from ansible_collections.kubescale.tuning.plugins.module_utils.node.confmerge import FORMATS, ConfError, merge


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            format=dict(type="str", required=True, choices=list(FORMATS)),
            settings=dict(type="dict", required=True),
            create=dict(type="bool", default=True),
            mode=dict(type="str", default="0644"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    path = p["path"]
    if not os.path.isabs(path):
        module.fail_json(msg="path: %r must be absolute" % path)
    if not p["settings"]:
        module.fail_json(msg="settings: give at least one key to set or remove")
    try:
        mode = int(p["mode"], 8)
    except ValueError:
        module.fail_json(msg="mode: %r is not an octal mode like 0644" % p["mode"])
    if os.path.isdir(path):
        module.fail_json(msg="path: %s is a directory" % path)
    if not os.path.isdir(os.path.dirname(path)) and not module.check_mode:
        # In check mode an earlier task may be about to create the directory.
        module.fail_json(msg="path: the directory of %s does not exist" % path)
    try:
        text = read_text(path)
    except (IOError, OSError) as exc:
        module.fail_json(msg="path: cannot read %s: %s" % (path, exc))
    if text is None and not p["create"]:
        module.fail_json(msg="path: %s does not exist (create=false)" % path)
    try:
        before, after, new_text, paths = merge(p["format"], text, p["settings"], path)
    except ConfError as exc:
        module.fail_json(msg=str(exc))
    keys = [".".join(str(k) for k in kp) for kp in paths]
    top = []
    for kp in paths:
        if kp[0] not in top:
            top.append(kp[0])
    previous = {}
    for key, kp in zip(keys, paths):
        value = before
        for part in kp:
            value = value.get(part) if isinstance(value, dict) else None
        previous[key] = value
    result = dict(changed=new_text is not None, path=path, changed_keys=keys, changed_top_keys=top, previous=previous,
                  config=after, created=text is None and new_text is not None)
    if new_text is not None:
        if module._diff:
            result["diff"] = dict(before=text or "", after=new_text,
                                  before_header=path, after_header=path)
        if not module.check_mode:
            try:
                atomic_write(path, new_text, mode)
            except (IOError, OSError) as exc:
                module.fail_json(msg="path: cannot write %s: %s" % (path, exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
