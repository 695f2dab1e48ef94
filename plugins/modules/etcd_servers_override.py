#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: etcd_servers_override
short_description: Wire kube-apiserver's --etcd-servers-overrides for one resource, once its servers answer healthy
version_added: "0.5.0"
description:
  - Runs on a control plane node. Reads kube-apiserver's static pod manifest (O(manifest)) and, with O(kubeadm), the ClusterConfiguration kubeadm
    renders it from (a file on the node, kubeadm's record in the cluster); sets O(resource) to O(servers) in
    C(--etcd-servers-overrides) (the other resources' overrides kept) in the manifest's container command and in
    C(apiServer.extraArgs).
  - Before writing anything - every text parsed and made, kubeadm's validation passed, the record's dry run accepted -
    asks every server's C(/health) from this node with
    the API server's own etcd client certificate (the manifest's C(--etcd-cafile), C(--etcd-certfile),
    C(--etcd-keyfile); without a manifest, O(tls_without_manifest)). A server that does not answer healthy fails the
    call and leaves everything as it was; so do a file that does not parse and a manifest whose API server has no
    etcd client TLS flags.
  - In check mode the servers are asked too; when they do not answer healthy (on a fresh fleet the real run converges
    them first), the call says so in RV(unhealthy) and a warning and still reports what it would write.
  - Files are written atomically (the manifest's temp file is a dot file the kubelet ignores), the manifest first,
    kubeadm's record last.
  - With neither a manifest nor a kubeadm configuration on the node it changes nothing and warns with the flag
    kube-apiserver needs.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  manifest:
    description: kube-apiserver's static pod manifest.
    type: path
    default: /etc/kubernetes/manifests/kube-apiserver.yaml
  container:
    description: The API server's container in the manifest; the first container when empty.
    type: str
    default: ""
  resource:
    description: The resource the override is for, as C(group/resource) (the core group is empty - C(/events)).
    type: str
    required: true
  servers:
    description: The client URLs of the etcd cluster that serves O(resource).
    type: list
    elements: str
    required: true
  tls_without_manifest:
    description:
      - The API server's etcd client TLS files when there is no manifest to read them from, by flag name.
      - kubeadm's by default.
    type: dict
    default:
      --etcd-cafile: /etc/kubernetes/pki/etcd/ca.crt
      --etcd-certfile: /etc/kubernetes/pki/apiserver-etcd-client.crt
      --etcd-keyfile: /etc/kubernetes/pki/apiserver-etcd-client.key
  what:
    description: How the error and the warnings name the servers' cluster.
    type: str
    default: The etcd cluster
  hint:
    description: What an operator does when the servers do not answer healthy, added to that error.
    type: str
    default: ""
  timeout:
    description: Seconds to wait for each server's answer.
    type: int
    default: 5
  restart_wait:
    description:
      - When the manifest changed, wait until the kubelet runs a new kube-apiserver and O(restart_wait.url) answers
        C(ok) before the call returns (and before kubeadm's record is written); otherwise the manifest is put back as
        it was and the call fails. With a rollout one node at a time, the next node's API server restarts only once
        this one is ready again. Empty, the call returns once the manifest is written.
    type: dict
    suboptions:
      url:
        description:
          - The API server's readiness endpoint on this node (its own certificate is not verified, only its answer is
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
      Reads every file and kubeadm's record, asks the servers, runs kubeadm's validation and the record's dry run,
      and reports the same change and diff; writes nothing.
  diff_mode:
    support: full
    details: Shows each changed file's (and kubeadm's record's) text before and after.
  platform:
    platforms: posix
requirements:
  - PyYAML on the node (Debian/Ubuntu package python3-yaml).
"""

EXAMPLES = r"""
- name: Events in their own etcd cluster
  kubescale.tuning.etcd_servers_override:
    manifest: /etc/kubernetes/manifests/kube-apiserver.yaml
    container: kube-apiserver
    kubeadm:
      record: auto
    resource: /events
    servers: [https://10.0.0.7:2383, https://10.0.0.8:2383, https://10.0.0.9:2383]
    what: The Events etcd cluster
    hint: Converge the etcd_events group first.
"""

RETURN = r"""
wired:
  description: Whether a manifest or a kubeadm configuration (file or record) was there to wire.
  returned: always
  type: bool
value:
  description: The C(--etcd-servers-overrides) value after the call (the manifest's, else kubeadm's).
  returned: when wired
  type: str
  sample: /events#https://10.0.0.7:2383;https://10.0.0.8:2383
previous:
  description: Each file's override before, by file (null when it had none).
  returned: when wired
  type: dict
changed_files:
  description: The files written (in check mode, that would be), kubeadm's record among them by its name.
  returned: always
  type: list
  elements: str
tls:
  description: The etcd client TLS files the servers were asked with, by flag name.
  returned: when wired
  type: dict
unhealthy:
  description: C(url - why) for each server that did not answer healthy (check mode only; a real run fails instead).
  returned: when wired
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.kubescale.tuning.plugins.module_utils.etcd.cluster import HealthAnswer, health_failure
from ansible_collections.kubescale.tuning.plugins.module_utils.etcd.override import (
    ARG,
    FLAG,
    WireError,
    kubeadm_edit,
    plan,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm import get_args
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm_sync import (
    ARGUMENT_SPEC as KUBEADM_SPEC,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm_sync import (
    SyncError,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm_sync import plan as kubeadm_plan
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.static_pod import (
    answers_ok,
    find_container,
    flag_values,
    uptime_ticks,
    wait_restarted,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import atomic_write, read_text


def container_argv(pod, name):
    """The container's command and args (what flag_values reads)."""
    container = find_container(pod, name)
    return container.get("command") or container.get("args") or []


def ask(url, tls, timeout):
    """GET <url>/health with the client certificate: its HealthAnswer."""
    try:
        resp = open_url(url.rstrip("/") + "/health", timeout=timeout, ca_path=tls["--etcd-cafile"],
                        client_cert=tls["--etcd-certfile"], client_key=tls["--etcd-keyfile"], use_proxy=False)
        return HealthAnswer(url, resp.getcode(), resp.read().decode("utf-8", "replace"), "")
    except Exception as exc:  # any failure to get an answer is the server's answer: not healthy
        body = ""
        try:  # an HTTP error's body: etcd's {"health":"false","reason":...}
            body = exc.read().decode("utf-8", "replace").strip()[:200] if hasattr(exc, "read") else ""
        except Exception:  # a body that cannot be read: the status alone
            body = ""
        why = "%s" % (getattr(exc, "reason", None) or exc)
        return HealthAnswer(url, getattr(exc, "code", -1), "", why + (" (%s)" % body if body else ""))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            manifest=dict(type="path", default="/etc/kubernetes/manifests/kube-apiserver.yaml"),
            container=dict(type="str", default=""),
            kubeadm=KUBEADM_SPEC,
            resource=dict(type="str", required=True),
            servers=dict(type="list", elements="str", required=True),
            tls_without_manifest=dict(type="dict", default={
                "--etcd-cafile": "/etc/kubernetes/pki/etcd/ca.crt",
                "--etcd-certfile": "/etc/kubernetes/pki/apiserver-etcd-client.crt",
                "--etcd-keyfile": "/etc/kubernetes/pki/apiserver-etcd-client.key"}),
            what=dict(type="str", default="The etcd cluster"),
            hint=dict(type="str", default=""),
            timeout=dict(type="int", default=5),
            restart_wait=dict(type="dict", options=dict(
                url=dict(type="str", default="https://127.0.0.1:{secure_port}/readyz"),
                timeout=dict(type="int", default=180))),
        ),
        supports_check_mode=True,
    )
    p = module.params
    manifest, kubeadm = p["manifest"], p["kubeadm"].get("config") or None
    manifest_text = read_text(manifest)
    kubeadm_text = read_text(kubeadm) if kubeadm else None
    try:
        import yaml
    except ImportError:
        module.fail_json(msg="etcd_servers_override needs PyYAML on the node (Debian/Ubuntu package python3-yaml)")
    record_opts = dict(p["kubeadm"], config="")
    try:
        sync = kubeadm_plan(yaml, module.run_command, module.get_bin_path("kubeadm"), record_opts,
                            kubeadm_edit(p["resource"], p["servers"]))
    except SyncError as exc:
        module.fail_json(msg="kubeadm: %s. Nothing was changed." % exc)
    if manifest_text is None and kubeadm_text is None and not sync.sources:
        module.warn("Neither %s nor a kubeadm configuration exists on this node: nothing wired. kube-apiserver "
                    "needs %s=%s#%s" % (manifest, FLAG, p["resource"], ";".join(p["servers"])))
        module.exit_json(changed=False, wired=False, changed_files=[])
    present = [path for path, text in ((manifest, manifest_text), (kubeadm, kubeadm_text)) if text is not None]
    present += sync.labels
    left = " and ".join(present) + (" were left as they were" if len(present) > 1 else " was left as it was")
    try:
        wire = plan(yaml, manifest_text, p["container"], kubeadm_text, p["resource"], p["servers"],
                    p["tls_without_manifest"], order=sync.extra_names("apiServer"))
    except WireError as exc:
        module.fail_json(msg="%s: %s. %s." % (manifest if manifest_text is not None else kubeadm, exc, left))
    tls = wire["tls"]
    unhealthy = [why for why in (health_failure(ask(url, tls, p["timeout"])) for url in p["servers"]) if why]
    if unhealthy and not module.check_mode:
        module.fail_json(msg="%s does not answer healthy from this node with kube-apiserver's etcd client certificate "
                             "(%s): %s. %s. %s" % (p["what"], tls["--etcd-certfile"], "; ".join(unhealthy), left,
                                                   p["hint"]), unhealthy=unhealthy)
    if unhealthy:
        module.warn("check mode: %s does not answer healthy (%s); a real run converges it first and asks again before "
                    "wiring" % (p["what"], "; ".join(unhealthy)))
    edits = [(path, text, w) for path, text, w in ((manifest, manifest_text, wire["manifest"]),
                                                   (kubeadm, kubeadm_text, wire["kubeadm"])) if w is not None]
    value = edits[0][2]["value"] if edits else None
    previous = dict((path, w["before"]) for path, _text, w in edits)
    for source in sync.sources:
        previous[source.label] = get_args(yaml.safe_load(source.before) or {}, "apiServer").get(ARG)
        value = value or get_args(source.cfg, "apiServer").get(ARG)
    result = dict(changed=False, wired=True, value=value, tls=tls, unhealthy=unhealthy, previous=previous,
                  changed_files=[path for path, _text, w in edits if w["after"] is not None] + sync.changed)
    diffs = []
    for path, text, w in edits:
        if w["after"] is None:
            continue
        result["changed"] = True
        diffs.append(dict(before=text, after=w["after"], before_header=path, after_header=path))
        if not module.check_mode:
            try:
                written_at = uptime_ticks()
                atomic_write(path, w["after"], mode=0o600)
            except (IOError, OSError) as exc:
                module.fail_json(msg="writing %s failed: %s" % (path, exc), **result)
            if path == manifest and p["restart_wait"]:
                url = p["restart_wait"]["url"].replace("{secure_port}", flag_values(
                    container_argv(yaml.safe_load(w["after"]), p["container"])).get("--secure-port") or "6443")
                why = wait_restarted("kube-apiserver", written_at, answers_ok(url), p["restart_wait"]["timeout"])
                if why:
                    atomic_write(path, text, mode=0o600)
                    module.fail_json(msg="%s within %ds of the manifest's change (%s): %s was put back as it was, "
                                         "and the kubelet runs the old one again" % (
                                             why, p["restart_wait"]["timeout"], url, path), **result)
    if sync.changed:
        result["changed"] = True
        diffs += sync.diffs()
        if not module.check_mode:
            try:
                sync.write()
            except SyncError as exc:
                module.fail_json(msg="kubeadm: %s. %s is written: run again to record it." % (
                    exc, " and ".join(path for path, _t, w in edits if w["after"] is not None) or "The rest"), **result)
    if module._diff and diffs:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
