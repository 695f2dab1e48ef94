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
  - In one call on a control plane node, where a role had a C(stat) of each file, two reads, a C(uri) per server,
    two C(set_fact), two C(assert) and two writes.
  - Reads kube-apiserver's static pod manifest (O(manifest)) and, when O(kubeadm_config) names one that exists,
    kubeadm's ClusterConfiguration; sets O(resource) to O(servers) in C(--etcd-servers-overrides) (the other
    resources' overrides kept) in the manifest's container command and in C(apiServer.extraArgs).
  - Before writing either file - both parsed, both new texts made - asks every server's C(/health) from this node with
    the API server's own etcd client certificate (the manifest's C(--etcd-cafile), C(--etcd-certfile),
    C(--etcd-keyfile); without a manifest, O(tls_without_manifest)). A server that does not answer healthy fails the
    call and leaves both files as they were; so do a file that does not parse and a manifest whose API server has no
    etcd client TLS flags.
  - In check mode the servers are asked too; when they do not answer healthy (on a fresh fleet the real run converges
    them first), the call says so in RV(unhealthy) and a warning and still reports what it would write.
  - Files are written atomically (the manifest's temp file is a dot file the kubelet ignores), the manifest first.
  - With neither file on the node it changes nothing and warns with the flag kube-apiserver needs.
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
  kubeadm_config:
    description: kubeadm's configuration file holding the ClusterConfiguration; empty for none.
    type: path
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
extends_documentation_fragment:
  - kubescale.tuning.attributes
attributes:
  check_mode:
    support: full
    details: Reads both files, asks the servers and reports the same change and diff; writes nothing.
  diff_mode:
    support: full
    details: Shows each changed file's text before and after.
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
    kubeadm_config: /etc/kubernetes/kubeadm-config.yaml
    resource: /events
    servers: [https://10.0.0.7:2383, https://10.0.0.8:2383, https://10.0.0.9:2383]
    what: The Events etcd cluster
    hint: Converge the etcd_events group first.
"""

RETURN = r"""
wired:
  description: Whether a manifest or a kubeadm configuration was there to wire.
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
  description: The files written (in check mode, that would be).
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

from ansible_collections.kubescale.tuning.plugins.module_utils._atomic import atomic_write, read_text
from ansible_collections.kubescale.tuning.plugins.module_utils._etcd import health_failures
from ansible_collections.kubescale.tuning.plugins.module_utils._etcd_override import (
    FLAG,
    WireError,
    health_answer,
    plan,
)


def ask(url, tls, timeout):
    """GET <url>/health with the client certificate, as one answer for health_failures."""
    try:
        resp = open_url(url.rstrip("/") + "/health", timeout=timeout, ca_path=tls["--etcd-cafile"],
                        client_cert=tls["--etcd-certfile"], client_key=tls["--etcd-keyfile"], use_proxy=False)
        return health_answer(url, resp.getcode(), resp.read().decode("utf-8", "replace"), "")
    except Exception as exc:  # any failure to get an answer is the server's answer: not healthy
        body = ""
        try:  # an HTTP error's body: etcd's {"health":"false","reason":...}
            body = exc.read().decode("utf-8", "replace").strip()[:200] if hasattr(exc, "read") else ""
        except Exception:  # a body that cannot be read: the status alone
            body = ""
        why = "%s" % (getattr(exc, "reason", None) or exc)
        return health_answer(url, getattr(exc, "code", -1), "", why + (" (%s)" % body if body else ""))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            manifest=dict(type="path", default="/etc/kubernetes/manifests/kube-apiserver.yaml"),
            container=dict(type="str", default=""),
            kubeadm_config=dict(type="path", default=""),
            resource=dict(type="str", required=True),
            servers=dict(type="list", elements="str", required=True),
            tls_without_manifest=dict(type="dict", default={
                "--etcd-cafile": "/etc/kubernetes/pki/etcd/ca.crt",
                "--etcd-certfile": "/etc/kubernetes/pki/apiserver-etcd-client.crt",
                "--etcd-keyfile": "/etc/kubernetes/pki/apiserver-etcd-client.key"}),
            what=dict(type="str", default="The etcd cluster"),
            hint=dict(type="str", default=""),
            timeout=dict(type="int", default=5),
        ),
        supports_check_mode=True,
    )
    p = module.params
    manifest, kubeadm = p["manifest"], p["kubeadm_config"] or None
    manifest_text = read_text(manifest)
    kubeadm_text = read_text(kubeadm) if kubeadm else None
    if manifest_text is None and kubeadm_text is None:
        module.warn("Neither %s nor a kubeadm configuration file exists on this node: nothing wired. kube-apiserver "
                    "needs %s=%s#%s" % (manifest, FLAG, p["resource"], ";".join(p["servers"])))
        module.exit_json(changed=False, wired=False, changed_files=[])
    present = [path for path, text in ((manifest, manifest_text), (kubeadm, kubeadm_text)) if text is not None]
    left = " and ".join(present) + (" were left as they were" if len(present) > 1 else " was left as it was")
    try:
        import yaml
    except ImportError:
        module.fail_json(msg="etcd_servers_override needs PyYAML on the node (Debian/Ubuntu package python3-yaml)")
    try:
        wire = plan(yaml, manifest_text, p["container"], kubeadm_text, p["resource"], p["servers"],
                    p["tls_without_manifest"])
    except WireError as exc:
        module.fail_json(msg="%s: %s. %s." % (manifest if manifest_text is not None else kubeadm, exc, left))
    tls = wire["tls"]
    unhealthy = health_failures([ask(url, tls, p["timeout"]) for url in p["servers"]])
    if unhealthy and not module.check_mode:
        module.fail_json(msg="%s does not answer healthy from this node with kube-apiserver's etcd client certificate "
                             "(%s): %s. %s. %s" % (p["what"], tls["--etcd-certfile"], "; ".join(unhealthy), left,
                                                   p["hint"]), unhealthy=unhealthy)
    if unhealthy:
        module.warn("check mode: %s does not answer healthy (%s); a real run converges it first and asks again before "
                    "wiring" % (p["what"], "; ".join(unhealthy)))
    edits = [(path, text, w) for path, text, w in ((manifest, manifest_text, wire["manifest"]),
                                                   (kubeadm, kubeadm_text, wire["kubeadm"])) if w is not None]
    result = dict(changed=False, wired=True, value=edits[0][2]["value"], tls=tls, unhealthy=unhealthy,
                  previous=dict((path, w["before"]) for path, _text, w in edits),
                  changed_files=[path for path, _text, w in edits if w["after"] is not None])
    diffs = []
    for path, text, w in edits:
        if w["after"] is None:
            continue
        result["changed"] = True
        diffs.append(dict(before=text, after=w["after"], before_header=path, after_header=path))
        if not module.check_mode:
            try:
                atomic_write(path, w["after"], mode=0o600)
            except (IOError, OSError) as exc:
                module.fail_json(msg="writing %s failed: %s" % (path, exc), **result)
    if module._diff and diffs:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
