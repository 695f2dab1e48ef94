# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: kube-apiserver's --etcd-servers-overrides for one resource, wired in its static pod manifest and kubeadm's
ClusterConfiguration (a file on the node; kubeadm's record through _kubeadm_sync, with `kubeadm_edit`) in one
transaction (etcd_servers_override): every text parsed and made before any is written, with _static_pod's and
_kubeadm's own edits (static_pod_flags and kubeadm_extra_args use them too).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm import (
    KubeadmError,
    arg_names,
    cluster_configuration,
    get_args,
    set_args,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.static_pod import (
    PodError,
    find_container,
    flag_values,
    kubeadm_order,
    merge_overrides,
    set_flags,
)

FLAG = "--etcd-servers-overrides"
ARG = "etcd-servers-overrides"
TLS_FLAGS = ("--etcd-cafile", "--etcd-certfile", "--etcd-keyfile")


class WireError(Exception):
    """A file that cannot be wired, said the way an operator fixes it."""


def _command(container):
    argv = container.get("command")
    if argv:
        return argv, "command"
    return container.get("args") or [], "args"


def kubeadm_edit(resource, servers):
    """The edit of a ClusterConfiguration (in place) that wires `resource` to `servers` in apiServer.extraArgs, other
    resources' overrides kept; raises KubeadmError or PodError."""
    def edit(cfg):
        before = get_args(cfg, "apiServer").get(ARG)
        return set_args(cfg, "apiServer", {ARG: merge_overrides(before or "", resource, servers)})
    return edit


def plan(yaml, manifest_text, container_name, kubeadm_text, resource, servers, tls_without_manifest, order=None):
    """What wiring `resource` to `servers` changes, from the files' texts (None: that file is absent).

    Returns dict(tls: the API server's etcd client TLS files, from its flags - or, without a manifest, the ones given;
    manifest/kubeadm: dict(before, after (None when unchanged), value) or None when the file is absent).
    The manifest's flags and volumes are put in kubeadm's order when kubeadm renders it: by `order` (the extraArgs
    names of kubeadm's record, when the caller has it), else by kubeadm's file's.
    Raises WireError, touching nothing, when a file does not parse, or the API server has no etcd client TLS flags
    (or, without a manifest, tls_without_manifest lacks one).
    """
    out = dict(manifest=None, kubeadm=None, tls=dict(tls_without_manifest))
    if kubeadm_text is not None:
        try:
            docs = list(yaml.safe_load_all(kubeadm_text))
            cfg = cluster_configuration(docs)
            before = get_args(cfg, "apiServer").get(ARG)
            changed = kubeadm_edit(resource, servers)(cfg)
            value = get_args(cfg, "apiServer").get(ARG)
        except (yaml.YAMLError, KubeadmError, PodError) as exc:
            raise WireError("kubeadm's configuration does not parse (%s)" % exc) from None
        after = yaml.safe_dump_all(docs, default_flow_style=False, sort_keys=False) if changed else None
        out["kubeadm"] = dict(before=before, value=value, after=after)
        if order is None:
            order = arg_names(cfg, "apiServer")
    if manifest_text is not None:
        try:
            pod = yaml.safe_load(manifest_text)
            container = find_container(pod, container_name)
            argv, key = _command(container)
            flags = flag_values(argv)
            value = merge_overrides(flags.get(FLAG) or "", resource, servers)
            new_argv, changed = set_flags(argv, {FLAG: value})
        except (yaml.YAMLError, PodError) as exc:
            raise WireError("the manifest does not parse as a Pod (%s)" % exc) from None
        out["tls"] = dict((f, flags.get(f)) for f in TLS_FLAGS)
        container[key] = new_argv
        moved = order is not None and kubeadm_order(pod, container, key, order)
        after = yaml.safe_dump(pod, default_flow_style=False, sort_keys=False) if changed or moved else None
        out["manifest"] = dict(before=flags.get(FLAG), value=value, after=after)
    missing = [f for f in TLS_FLAGS if not out["tls"].get(f)]
    if missing and manifest_text is not None:
        raise WireError("kube-apiserver has no %s; it uses one client TLS configuration for every etcd, so the "
                        "servers (client certificates required) could not be reached" % "/".join(missing))
    if missing:
        raise WireError("tls_without_manifest: give %s" % ", ".join(missing))
    return out
