# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: kubeadm's record of a cluster, which `kubeadm upgrade` and `kubeadm join` rebuild nodes from.

The ClusterConfiguration in the kube-system/kubeadm-config ConfigMap (the static pod manifests are rendered from it)
and the KubeletConfiguration in kube-system/kubelet-config (every node's /var/lib/kubelet/config.yaml is written from
it), read and written through the API server from a control plane node, with its admin.conf (the standard library's
HTTPS: nodes have no Kubernetes client). A change is checked by the node's own `kubeadm config validate` and sent as a
server-side dry run before the module changes anything; it is sent for real last, once the node's files are written,
with the resourceVersion it was planned against (a record changed meanwhile fails the write instead of being
overwritten).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import os
import ssl
import tempfile
import time
from urllib.error import HTTPError, URLError

CLUSTER = ("kubeadm-config", "ClusterConfiguration")
KUBELET = ("kubelet-config", "kubelet")
MODES = ("auto", "always", "never")
ADMIN_CONF = "/etc/kubernetes/admin.conf"
NAMESPACE = "kube-system"


class RecordError(Exception):
    pass


# Answers a request is asked again after, with the pauses between its attempts: the controlPlaneEndpoint's load
# balancer sends a new connection to an API server that is stopping until its health check has seen it go (a connection
# closed, refused, or reset), and an API server starting or shedding load answers 429, 503. Asking again is safe for
# every request this module makes: a GET, or a PUT at the resourceVersion it was planned against, which the API server
# refuses (409) once it was applied.
RETRY_STATUS = (429, 500, 502, 503, 504)
RETRY_PAUSES = (1, 2, 4, 8, 15)


class Client(object):
    """Requests to the API server with a kubeconfig's client certificate (kubeadm's admin.conf embeds it)."""

    def __init__(self, yaml, path, timeout=20, pauses=RETRY_PAUSES, sleep=time.sleep):
        self.pauses, self.sleep = pauses, sleep
        with open(path) as f:
            cfg = yaml.safe_load(f) or {}
        try:
            ctx_name = cfg.get("current-context")
            ctx = next(c["context"] for c in cfg.get("contexts") or [] if c.get("name") == ctx_name)
            cluster = next(c["cluster"] for c in cfg.get("clusters") or [] if c.get("name") == ctx["cluster"])
            user = next((u.get("user") or {} for u in cfg.get("users") or [] if u.get("name") == ctx.get("user")), {})
        except (StopIteration, KeyError, TypeError, AttributeError):
            raise RecordError("%s: no current context with a cluster" % path) from None
        self.server = str(cluster.get("server", "")).rstrip("/")
        self.timeout = timeout
        self.ctx = ssl.create_default_context()
        if cluster.get("certificate-authority-data"):
            self.ctx.load_verify_locations(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        elif cluster.get("certificate-authority"):
            self.ctx.load_verify_locations(cafile=cluster["certificate-authority"])
        self.token = user.get("token")
        if user.get("client-certificate-data") and user.get("client-key-data"):
            # ssl loads a key pair from a file only: a private one, gone once loaded
            fd, pem = tempfile.mkstemp(prefix="kubescale-kubeconfig-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(base64.b64decode(user["client-certificate-data"]) + b"\n"
                            + base64.b64decode(user["client-key-data"]))
                self.ctx.load_cert_chain(pem)
            finally:
                os.remove(pem)
        elif user.get("client-certificate"):
            self.ctx.load_cert_chain(user["client-certificate"], user.get("client-key"))

    def call(self, method, path, body=None):
        """(HTTP status, the JSON answer), asked again after each of `pauses` while the connection fails or the answer
        is one of RETRY_STATUS; a connection that keeps failing raises RecordError."""
        pauses = list(self.pauses)
        while True:
            try:
                status, answer = self._call(method, path, body)
                if status not in RETRY_STATUS or not pauses:
                    return status, answer
            except RecordError:
                if not pauses:
                    raise
            self.sleep(pauses.pop(0))

    def _call(self, method, path, body=None):
        # imported here: only a control plane node's runs ask the API server, and ansible.module_utils.urls (with
        # http.client) is compiled from the module's zip on every run that imports it
        from ansible.module_utils.urls import ConnectionError as UrlConnectionError
        from ansible.module_utils.urls import Request

        data = json.dumps(body).encode() if body is not None else None
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        try:
            resp = Request().open(method, self.server + path, data=data, headers=headers, context=self.ctx,
                                  timeout=self.timeout)
            try:
                return resp.status, json.loads(resp.read() or b"{}")
            finally:
                resp.close()
        except HTTPError as exc:
            try:
                return exc.code, json.loads(exc.read() or b"{}")
            except ValueError:
                return exc.code, {}
        except (URLError, OSError, ssl.SSLError, UrlConnectionError) as exc:
            raise RecordError("the API server at %s does not answer: %s (asked %d times in %d s)"
                              % (self.server, exc, len(self.pauses) + 1, sum(self.pauses))) from None


class Record(object):
    """One of kubeadm's ConfigMaps as read: the object (its resourceVersion is what a write is planned against) and
    the text of its one YAML document."""

    def __init__(self, which, obj):
        self.name, self.key = which
        self.obj = obj
        self.text = (obj.get("data") or {}).get(self.key)
        if self.text is None:
            raise RecordError("%s/%s has no %s" % (NAMESPACE, self.name, self.key))

    @property
    def label(self):
        return "ConfigMap %s/%s (%s)" % (NAMESPACE, self.name, self.key)


def connect(yaml, mode, kubeconfig, var=""):
    """The Client kubeadm's record is reached with, or None when it is not to be (mode never, or auto on a node
    without `kubeconfig`: not a kubeadm control plane node). Mode always without the file fails."""
    if mode not in MODES:
        raise RecordError("%skubeadm_record must be one of %s, got %r" % (var, ", ".join(MODES), mode))
    if mode == "never":
        return None
    if not os.path.exists(kubeconfig):
        if mode == "always":
            raise RecordError("%skubeadm_record is always, and %s (a kubeadm control plane node's admin.conf) does not "
                              "exist on this node" % (var, kubeconfig))
        return None
    return Client(yaml, kubeconfig)


def read(client, which, mode="auto"):
    """The Record of `which` (CLUSTER or KUBELET), or None when the cluster has no such ConfigMap and mode is auto
    (not a cluster kubeadm made)."""
    status, obj = client.call("GET", "/api/v1/namespaces/%s/configmaps/%s" % (NAMESPACE, which[0]))
    if status == 404 and mode != "always":
        return None
    if status != 200:
        raise RecordError("reading ConfigMap %s/%s: HTTP %s %s" % (NAMESPACE, which[0], status, obj.get("message", "")))
    return Record(which, obj)


def validate(run_command, kubeadm, text):
    """`kubeadm config validate` on a kubeadm configuration text (a ClusterConfiguration, and component
    configurations beside it): None when kubeadm accepts it, else kubeadm's own words."""
    fd, path = tempfile.mkstemp(prefix="kubescale-kubeadm-", suffix=".yaml")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        rc, out, err = run_command([kubeadm, "config", "validate", "--config", path])
    finally:
        os.remove(path)
    if rc == 0:
        return None
    words = [line for line in (err or out or "").splitlines()
             if line.strip() and "To see the stack trace" not in line]
    return " ".join(words).replace(path, "the new configuration") or "kubeadm config validate failed (%d)" % rc


class RecordConflict(RecordError):
    """The record changed between its read and the write (another node of the same run, an operator)."""


def send(client, record, new_text, dry_run):
    """PUT the ConfigMap with its document replaced by `new_text`, at the resourceVersion it was read at."""
    obj = json.loads(json.dumps(record.obj))
    obj["data"][record.key] = new_text
    path = "/api/v1/namespaces/%s/configmaps/%s%s" % (NAMESPACE, record.name, "?dryRun=All" if dry_run else "")
    status, answer = client.call("PUT", path, obj)
    if status == 409:
        raise RecordConflict("%s changed while this run planned its change (resourceVersion %s); run again"
                             % (record.label, record.obj.get("metadata", {}).get("resourceVersion")))
    if status != 200:
        raise RecordError("%s%s: HTTP %s %s" % (record.label, " (dry run)" if dry_run else "", status,
                                                answer.get("message", "")))
    return answer
