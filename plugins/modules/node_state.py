#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: node_state
short_description: One tuning's files, config merges, links, systemd units and local fact in one call
version_added: "0.4.0"
description:
  - Owns the whole on-disk state of one tuning on a node, so a role needs one task (one remote module run) where it
    had a C(file), C(copy), C(template), C(systemd_service) and C(local_fact) task each. On a fleet of thousands of
    nodes every task costs the controller a worker process per host and every module run an SSH round trip.
  - Validates every entry first (paths absolute, modes octal, owners and groups known on the node, unit names, merge
    formats); bad input fails naming the option and index, before anything changes.
  - Then, changing only what differs, in this order - O(directories), O(files) (written atomically, owner and mode
    enforced), O(merges) (settings merged into JSON, YAML, TOML or environment files as data, as
    M(kubescale.tuning.config_merge) does; an existing file keeps its owner and mode), O(links), one
    C(systemctl daemon-reload) when a path under a systemd unit directory changed, O(units), and the O(fact) last,
    so the fact says what was applied only once it was.
author:
  - kubescale.tuning contributors (@kubescale)
extends_documentation_fragment:
  - kubescale.tuning.attributes
  - kubescale.tuning.node_state
  - kubescale.tuning.checks
  - kubescale.tuning.fact
attributes:
  action:
    support: full
    description: >-
      An action plugin evaluates O(checks) on the controller first, reads O(files[].src) there, and sends a file's
      text only when the node needs it.
  check_mode:
    support: full
    details: Makes the same comparisons and asks systemd the same questions; writes nothing and reports the same changes.
  diff_mode:
    support: full
    details: Shows each changed file before and after, and a directory's or link's old and new state.
  platform:
    platforms: posix
requirements:
  - systemd (systemctl) on the node when O(units) is given.
  - PyYAML on the node for a YAML merge.
"""

EXAMPLES = r"""
- name: Install a boot unit, make docker require it, and record the fact
  kubescale.tuning.node_state:
    files:
      - path: /usr/local/libexec/kubescale-local-ssd
        src: kubescale-local-ssd.py
        mode: "0755"
      - path: /etc/systemd/system/kubescale-local-ssd.service
        content: "{{ lookup('ansible.builtin.template', 'kubescale-local-ssd.service.j2') }}"
    dropins:
      - units: [docker.service, containerd.service]
        name: 10-kubescale-local-ssd.conf
        content: |
          [Unit]
          Requires=kubescale-local-ssd.service
          After=kubescale-local-ssd.service
    units:
      - name: kubescale-local-ssd.service
        enabled: true
        state: started
    fact:
      name: kubescale_local_ssd
      data:
        mount: /mnt/local-ssd

- name: Merge the kubelet's pull settings and restart it when they changed
  kubescale.tuning.node_state:
    merges:
      - path: /var/lib/kubelet/config.yaml
        format: yaml
        settings:
          serializeImagePulls: false
    units:
      - name: kubelet.service
        restart_on: [/var/lib/kubelet/config.yaml]
"""

RETURN = r"""
changed_paths:
  description: The paths that were (or in check mode would be) created or changed, in the order they were handled.
  returned: always
  type: list
  elements: str
  sample: [/etc/systemd/system/kubescale-local-ssd.service, /etc/ansible/facts.d/kubescale_local_ssd.fact]
actions:
  description: What was (or would be) asked of systemd.
  returned: always
  type: list
  elements: str
  sample: [daemon-reload, enable kubescale-local-ssd.service, start kubescale-local-ssd.service]
content_sent:
  description: The paths of the O(files[].src) files whose text was sent, because the node's file differed.
  returned: always
  type: list
  elements: str
  sample: [/usr/local/libexec/kubescale-local-ssd]
content_needed:
  description:
    - Indices into O(files) of the entries given by O(files[].sha256) whose file on the node differs; the module then
      changed nothing. The action consumes this (it sends their text in a second run).
  returned: when a file given by sha256 differs
  type: list
  elements: int
  sample: [0]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.node.checks import CHECKS_ARGUMENT_SPEC
from ansible_collections.kubescale.tuning.plugins.module_utils.node.state import (
    NODE_STATE_OPTIONS,
    NodeStateError,
    apply_or_fail,
    content_needed,
    validate,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(NODE_STATE_OPTIONS, checks=CHECKS_ARGUMENT_SPEC),
        supports_check_mode=True,
    )
    try:
        spec = validate(module.params)
    except NodeStateError as exc:
        module.fail_json(msg=str(exc))
    needed = content_needed(spec)
    if needed:
        module.exit_json(changed=False, content_needed=needed, changed_paths=[], actions=[])
    module.exit_json(**apply_or_fail(module, spec))


if __name__ == "__main__":
    main()
