#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: etcd_member_info
short_description: Find the etcd member on this node, how it runs, where its data is, and what the last run recorded
version_added: "0.4.0"
description:
  - Read-only, in one call. Finds the member a systemd unit runs (O(service) reading O(env_file) - the distro
    package's C(/etc/default/etcd) or kubespray's C(/etc/etcd.env)) or kubeadm runs as a static pod (O(manifest), or
    the copy an interrupted run held aside at O(held)), and returns the same settings for both - name, data directory,
    advertised client and peer URLs, quota - from the environment (read by the collection's one env parser, which
    takes C(export NAME=value) as systemd does) or from the pod's flags and hostPath volumes.
  - Also whether the member's data is on O(data_dir) already, whether that data was wiped (no C(member) directory
    there, or the local SSD's wipe marker O(marker) changed since the last run recorded it in O(fact)), and whether a
    systemd member an interrupted run left stopped has to be started again, and which old data directory a move that
    died between its switch and its backup left as it was (C(<data_dir>.moved-from)); and the TLS files etcdctl needs.
  - Fails, saying nothing was changed, when there is no member to move.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  mode:
    description: C(auto) finds the static pod first, then the unit.
    type: str
    default: auto
    choices: [auto, systemd, static_pod]
  service:
    description: The systemd unit of a systemd member.
    type: str
    default: etcd.service
  env_file:
    description: The environment file of a systemd member.
    type: path
    default: /etc/default/etcd
  manifest:
    description: kubeadm's etcd static pod manifest.
    type: path
    default: /etc/kubernetes/manifests/etcd.yaml
  held:
    description: Where a stopped static pod member's manifest is held (M(kubescale.tuning.static_pod)).
    type: path
    required: true
  container:
    description: The etcd container in the manifest.
    type: str
    default: etcd
  data_dir:
    description: The member's directory on the local SSD.
    type: path
    required: true
  fact:
    description: What the last run recorded (JSON).
    type: path
    required: true
  marker:
    description: The local SSD's wipe marker (JSON with C(wiped_at)).
    type: path
    default: /var/lib/kubescale/local-ssd.wiped
  cacert:
    description: etcdctl's CA file; empty takes kubeadm's for a static pod member with https client URLs.
    type: str
    default: ""
  cert:
    description: etcdctl's client certificate; empty takes kubeadm's healthcheck client's in that case.
    type: str
    default: ""
  key:
    description: Its key.
    type: str
    default: ""
extends_documentation_fragment:
  - kubescale.tuning.attributes
  - kubescale.tuning.attributes.info
requirements:
  - PyYAML on the node for a static pod member (Debian/Ubuntu package python3-yaml).
"""

EXAMPLES = r"""
- name: Find the member
  kubescale.tuning.etcd_member_info:
    held: /etc/kubernetes/kubescale-held/etcd.yaml
    data_dir: /mnt/local-ssd/etcd
    fact: /etc/ansible/facts.d/kubescale_etcd_local_disk.fact
  register: member
"""

RETURN = r"""
kind:
  description: How the member runs.
  returned: success
  type: str
  sample: static_pod
manifest_exists:
  description: Whether O(manifest) is in the kubelet's directory (false while an interrupted run holds it aside).
  returned: success
  type: bool
active_state:
  description: The systemd unit's ActiveState.
  returned: success
  type: str
settings:
  description: The member's settings as etcd's environment names (ETCD_NAME, ETCD_DATA_DIR, ...).
  returned: success
  type: dict
env:
  description: The environment file's own settings (systemd members; empty otherwise).
  returned: success
  type: dict
flags:
  description: The static pod's etcd flags (empty for systemd members).
  returned: success
  type: dict
volumes:
  description: The static pod's hostPath volumes with where the container mounts them.
  returned: success
  type: list
  elements: dict
data_volume:
  description: The hostPath volume holding the data directory (static pod members).
  returned: success
  type: str
name:
  description: The member's name.
  returned: success
  type: str
data_dir:
  description: Where the member's data is now.
  returned: success
  type: str
client_urls:
  description: Its advertised client URLs.
  returned: success
  type: list
  elements: str
peer_urls:
  description: Its advertised peer URLs.
  returned: success
  type: list
  elements: str
move:
  description: Whether the data is not on O(data_dir) yet.
  returned: success
  type: bool
wiped:
  description: Whether the member runs from O(data_dir) and its data there is gone.
  returned: success
  type: bool
start_stopped:
  description: Whether a systemd member is stopped with its data whole (an interrupted run) and is to be started.
  returned: success
  type: bool
recorded:
  description: What the last run recorded in O(fact) (empty when nothing was).
  returned: success
  type: dict
ssd_marker:
  description: The wipe marker's time now (empty when there is none).
  returned: success
  type: str
moved_from:
  description: >-
    The old data directory a move that died between its switch and its backup left as it was, as the move noted it in
    C(<data_dir>.moved-from) (empty when there is none, or it was kept as its backup already).
  returned: success
  type: str
moved_from_note:
  description: Whether C(<data_dir>.moved-from) exists (a move started and did not finish).
  returned: success
  type: bool
tls:
  description: The TLS files etcdctl uses (C(cacert), C(cert), C(key); empty strings when none).
  returned: success
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.etcd.member import (
    MemberError,
    describe,
    kind_of,
    marker,
    moved_from,
    moved_from_path,
    parse_show,
    pod_settings,
    read_env_file,
    recorded,
    systemd_settings,
    tls_files,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.static_pod import PodError
from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import read_text


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", default="auto", choices=["auto", "systemd", "static_pod"]),
            service=dict(type="str", default="etcd.service"),
            env_file=dict(type="path", default="/etc/default/etcd"),
            manifest=dict(type="path", default="/etc/kubernetes/manifests/etcd.yaml"),
            held=dict(type="path", required=True),
            container=dict(type="str", default="etcd"),
            data_dir=dict(type="path", required=True),
            fact=dict(type="path", required=True),
            marker=dict(type="path", default="/var/lib/kubescale/local-ssd.wiped"),
            cacert=dict(type="str", default=""),
            cert=dict(type="str", default=""),
            key=dict(type="str", default="", no_log=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    systemctl = module.get_bin_path("systemctl", required=True)
    rc, out, err = module.run_command([systemctl, "show", p["service"], "-p", "LoadState", "-p", "ActiveState",
                                       "-p", "Environment"])
    if rc != 0:
        module.fail_json(msg="systemctl show %s failed: %s" % (p["service"], err.strip()))
    unit = parse_show(out)
    manifest_exists = os.path.exists(p["manifest"])
    pod_path = p["manifest"] if manifest_exists else p["held"]
    try:
        kind = kind_of(p["mode"], manifest_exists or os.path.exists(p["held"]), unit.get("LoadState"),
                       p["manifest"], p["service"])
        env, flags, vols, data_volume = {}, {}, [], ""
        if kind == "static_pod":
            try:
                import yaml
            except ImportError:
                module.fail_json(msg="etcd_member_info needs PyYAML on the node (Debian/Ubuntu package python3-yaml)")
            try:
                settings, flags, vols, data_volume = pod_settings(yaml.safe_load(read_text(pod_path)), p["container"])
            except (yaml.YAMLError, PodError) as exc:
                raise MemberError("%s: %s. Nothing was changed." % (pod_path, exc)) from exc
        else:
            env = read_env_file(read_text(p["env_file"]), p["env_file"])
            settings = systemd_settings(unit["Environment"], env)
        last = recorded(read_text(p["fact"]))
        ssd_marker = marker(read_text(p["marker"]))
        note = read_text(moved_from_path(os.path.normpath(p["data_dir"])))
        info = describe(kind, settings, flags, os.path.normpath(p["data_dir"]), last, ssd_marker,
                        os.path.isdir(os.path.join(p["data_dir"], "member")),
                        lambda current: os.path.isdir(os.path.join(current, "member")),
                        unit.get("ActiveState"), p["mode"], p["manifest"], p["service"], p["env_file"])
    except MemberError as exc:
        module.fail_json(msg=str(exc))
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot read %s: %s. Nothing was changed." % (getattr(exc, "filename", ""), exc))
    info.update(changed=False, kind=kind, manifest_exists=manifest_exists, active_state=unit.get("ActiveState"),
                settings=settings, env=env, flags=flags, volumes=vols, data_volume=data_volume, recorded=last,
                ssd_marker=ssd_marker, moved_from=moved_from(note, os.path.exists), moved_from_note=note is not None,
                tls=tls_files(kind, info["client_urls"], flags, p["cacert"], p["cert"], p["key"]))
    module.exit_json(**info)


if __name__ == "__main__":
    main()
