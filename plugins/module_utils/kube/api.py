# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: API objects through the Kubernetes Python client, for the modules that run on the controller.

One transaction for every object this collection keeps in a cluster (dns_spread's PodDisruptionBudget,
apiserver_load's APF objects): each object's change is first sent as a server-side dry run and what the API server
would store compared with what it has (`plan`); only when every object of the call was accepted are the changes sent
for real (`write`). So a second run sends nothing, check mode reports exactly what a real run changes, and a refused
object leaves the others as they were. Responses are read as JSON (`_preload_content=False`), not the client's models.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import traceback

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config.config_exception import ConfigException
    HAS_K8S = True
    K8S_IMPORT_ERROR = None
except ImportError:
    HAS_K8S = False
    K8S_IMPORT_ERROR = traceback.format_exc()

    class ApiException(Exception):
        pass

    class ConfigException(Exception):
        pass

MERGE = "application/merge-patch+json"
SMP = "application/strategic-merge-patch+json"
# (apiVersion, kind) -> (the client's API class, its method suffix, namespaced)
KINDS = {
    ("policy/v1", "PodDisruptionBudget"): ("PolicyV1Api", "pod_disruption_budget", True),
    ("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration"):
        ("FlowcontrolApiserverV1Api", "priority_level_configuration", False),
    ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema"): ("FlowcontrolApiserverV1Api", "flow_schema", False),
}
# What a change to an object is judged and shown by (status and the server's own metadata move on their own).
COMPARED = ("spec",)


class KubeError(Exception):
    pass


class SendError(KubeError):
    """A change the API server took as a dry run and then refused, or that did not reach it, when sent for real."""


def api_client(kubeconfig, context):
    """The client for `kubeconfig` (or the client's default file: KUBECONFIG, ~/.kube/config), else the in-cluster
    service account when no kubeconfig was named."""
    try:
        return k8s_config.new_client_from_config(config_file=kubeconfig or None, context=context or None)
    except (ConfigException, OSError) as exc:
        if kubeconfig:
            raise KubeError("no way to the API server through kubeconfig %s: %s" % (kubeconfig, exc)) from exc
        first = exc
    cfg = k8s_client.Configuration()
    try:
        k8s_config.load_incluster_config(client_configuration=cfg)
    except ConfigException:
        raise KubeError("no way to the API server: no default kubeconfig (%s) and not in a cluster" % first) from None
    return k8s_client.ApiClient(cfg)


def api_error(exc):
    """An ApiException in the API server's words (its Status message), not the client's dump of the response."""
    try:
        message = json.loads(exc.body).get("message")
    except (TypeError, ValueError, AttributeError):
        message = None
    return "HTTP %s %s" % (getattr(exc, "status", "?"), message or getattr(exc, "reason", exc))


def data(response):
    return json.loads(response.data)


def failure(step, exc, sent=()):
    """What a call says when `step` failed with `exc`: the API server's words, and what was sent before it."""
    why = api_error(exc) if isinstance(exc, ApiException) else str(exc)
    done = "Sent before it: %s." % ", ".join(sent) if sent else "Nothing was sent."
    return "%s: %s. %s" % (step, why, done)


def kind_of(obj):
    """The table entry of `obj`'s kind; an object of another kind, or without a name, is refused."""
    key = (obj.get("apiVersion"), obj.get("kind"))
    if key not in KINDS:
        raise KubeError("%s/%s is not a kind this collection applies (%s)" % (
            key[0], key[1], ", ".join("%s %s" % k for k in sorted(KINDS))))
    meta = obj.get("metadata") or {}
    if not meta.get("name"):
        raise KubeError("a %s without metadata.name" % key[1])
    if KINDS[key][2] and not meta.get("namespace"):
        raise KubeError("%s %s without metadata.namespace" % (key[1], meta["name"]))
    return KINDS[key]


def label(obj):
    meta = obj["metadata"]
    return "%s %s" % (obj["kind"], "%s/%s" % (meta["namespace"], meta["name"]) if meta.get("namespace")
                      else meta["name"])


def compared(obj):
    return dict((key, obj[key]) for key in COMPARED if key in (obj or {}))


class Change(object):
    """One object's planned change: `changed` (judged by the spec the dry run says the API server would store, against
    the one it has), its diff (of `shown(object)`: the spec, unless told), and the request `write` sends for real."""

    def __init__(self, obj, have, stored, call, args, kwargs, shown=compared):
        self.obj, self.have, self.stored = obj, have, stored
        self.label = label(obj)
        self.changed = have is None or compared(stored) != compared(have)
        self._call, self._args, self._kwargs, self._shown = call, args, kwargs, shown

    def diff(self):
        return dict(before=self._shown(self.have) if self.have is not None else {}, after=self._shown(self.stored),
                    before_header=self.label + (" (none)" if self.have is None else ""), after_header=self.label)

    def write(self, timeout):
        self._call(*self._args, _preload_content=False, _request_timeout=timeout, **self._kwargs)


def patch(obj, have, call, args, timeout, content_type=MERGE, shown=compared):
    """The Change of sending `call(*args)` (a patch of `obj`, which the API server has as `have`) with
    `content_type`, sent as a dry run now; an ApiException when the API server refuses it."""
    kwargs = {"_content_type": content_type}
    stored = data(call(*args, dry_run="All", _preload_content=False, _request_timeout=timeout, **kwargs))
    return Change(obj, have, stored, call, args, kwargs, shown)


def send(changes, timeout):
    """Sends, in turn, each change that changes something, once every one was accepted as a dry run. A failure raises
    SendError naming the change and what was sent before it."""
    sent = []
    for change in changes:
        if not change.changed:
            continue
        try:
            change.write(timeout)
        except Exception as exc:  # pylint: disable=broad-except  # the API's refusals, urllib3's connection errors
            raise SendError(failure(change.label, exc, sent)) from None
        sent.append(change.label)
    return sent


def plan(api, obj, timeout, patch_for=None):
    """The Change that makes the cluster hold `obj`: a create when it is missing, else a JSON merge patch
    (`patch_for(the object the API server has)`, or `obj`'s spec), each sent as a dry run now. An object the API
    server refuses raises ApiException here, before anything is written."""
    cls, suffix, namespaced = kind_of(obj)
    api_obj = getattr(k8s_client, cls)(api)
    meta = obj["metadata"]
    ns_part = "namespaced_" if namespaced else ""
    where = (meta["name"], meta["namespace"]) if namespaced else (meta["name"],)
    try:
        read = getattr(api_obj, "read_%s%s" % (ns_part, suffix))
        have = data(read(*where, _preload_content=False, _request_timeout=timeout))
    except ApiException as exc:
        if exc.status != 404:
            raise
        have = None
    if have is not None:
        body = patch_for(have) if patch_for else compared(obj)
        return patch(obj, have, getattr(api_obj, "patch_%s%s" % (ns_part, suffix)), where + (body,), timeout)
    call = getattr(api_obj, "create_%s%s" % (ns_part, suffix))
    args = (meta["namespace"], obj) if namespaced else (obj,)
    stored = data(call(*args, dry_run="All", _preload_content=False, _request_timeout=timeout))
    return Change(obj, have, stored, call, args, {})
