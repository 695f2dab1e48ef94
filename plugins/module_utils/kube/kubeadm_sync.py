# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: a control plane component's settings written where kubeadm renders its manifest from, in the same call
that edits the manifest on the node.

Two places, either or both: a kubeadm configuration file on the node (what `kubeadm init --config`, or on an external
etcd host `kubeadm init phase etcd local --config`, renders from) and kubeadm's record in the cluster
(_kubeadm_record: the ClusterConfiguration in kube-system/kubeadm-config, what `kubeadm upgrade` renders from). `plan`
applies one edit to the ClusterConfiguration of each, checks each changed text with the node's `kubeadm config
validate`, and sends the record's as a server-side dry run: all before the calling module writes anything. `write`
comes last, after the manifest: the file atomically, the record at the resourceVersion it was planned against.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm import (
    KubeadmError,
    arg_names,
    cluster_configuration,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm_record import (
    ADMIN_CONF,
    CLUSTER,
    KUBELET,
    RecordConflict,
    RecordError,
    connect,
    read,
    send,
    validate,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import atomic_write, read_text

# The `kubeadm` option of the modules that write a component's settings where kubeadm reads them (doc fragment
# kubescale.tuning.kubeadm).
ARGUMENT_SPEC = dict(type="dict", default={}, options=dict(
    config=dict(type="path", default=""),
    record=dict(type="str", default="never", choices=["auto", "always", "never"]),
    kubeconfig=dict(type="path", default=ADMIN_CONF)))
COMPONENTS = {"kube-apiserver": "apiServer", "kube-controller-manager": "controllerManager",
              "kube-scheduler": "scheduler", "etcd": "etcd"}


class SyncError(Exception):
    pass


# Writes of a record that another writer changed meanwhile: re-read, the edit applied again, validated again.
CONFLICT_ATTEMPTS = 5


class Source(object):
    """One place kubeadm renders from, as read and as it would be after the edit (`after` None: unchanged).

    A record's `replan()` reads it again and returns its fresh Source (the same edit, validated again)."""

    def __init__(self, label, before, after, cfg, record=None, path=None, replan=None):
        self.label, self.before, self.after, self.cfg = label, before, after, cfg
        self.record, self.path, self.replan = record, path, replan

    @property
    def changed(self):
        return self.after is not None


class Sync(object):
    def __init__(self, sources, client):
        self.sources, self.client = sources, client

    @property
    def changed(self):
        return [s.label for s in self.sources if s.changed]

    @property
    def labels(self):
        return [s.label for s in self.sources]

    def extra_names(self, component):
        """The extraArgs order kubeadm renders the manifest with: the record's (what an upgrade renders), else the
        file's; None when neither is there."""
        ordered = sorted(self.sources, key=lambda s: s.record is None)
        return arg_names(ordered[0].cfg, component) if ordered else None

    def diffs(self):
        return [dict(before=s.before, after=s.after, before_header=s.label, after_header=s.label)
                for s in self.sources if s.changed]

    def write(self):
        """The file atomically, then the record; a failure names what was written before it."""
        done = []
        for source in self.sources:
            if not source.changed:
                continue
            try:
                if source.record is not None:
                    self._record(source)
                else:
                    atomic_write(source.path, source.after, mode=0o600)
            except (RecordError, IOError, OSError) as exc:
                raise SyncError("%s: %s%s" % (source.label, exc, "; written before it: " + ", ".join(done)
                                              if done else "")) from None
            done.append(source.label)
        return done

    def _record(self, source):
        """Send a record's new text. When it changed since it was read - the same tuning written by another control
        plane node of the same run, an operator's edit - read it again and apply the edit to what is there: nothing
        to send when the other writer already recorded it."""
        for _attempt in range(CONFLICT_ATTEMPTS):
            try:
                send(self.client, source.record, source.after, dry_run=False)
                return
            except RecordConflict:
                if source.replan is None:
                    raise
                source = source.replan()
                if not source.changed:
                    return
        raise RecordError("%s kept changing under %d writes; run again" % (source.label, CONFLICT_ATTEMPTS))


def _edited(yaml, docs, edit):
    """(the ClusterConfiguration among `docs`, whether `edit` changed it): the edit is judged on the data, so a
    document kubeadm wrote is not rewritten for its formatting."""
    cfg = cluster_configuration(docs)
    before = yaml.safe_dump(cfg, sort_keys=True)
    edit(cfg)
    return cfg, yaml.safe_dump(cfg, sort_keys=True) != before


def _cluster_record(yaml, client, record, edit, run_command, kubeadm_bin):
    """The record's Source: `edit` applied to its ClusterConfiguration, and how to do it again on a fresh read."""
    def replan():
        fresh = read(client, CLUSTER, "always")
        source = _cluster_record(yaml, client, fresh, edit, run_command, kubeadm_bin)
        if source.changed and kubeadm_bin:
            refused = validate(run_command, kubeadm_bin, source.after)
            if refused:
                raise RecordError("kubeadm refuses the new ClusterConfiguration: %s" % refused)
        return source
    doc = yaml.safe_load(record.text)
    cfg, changed = _edited(yaml, [doc], edit)
    after = yaml.safe_dump(doc, default_flow_style=False, sort_keys=False) if changed else None
    return Source(record.label, record.text, after, cfg, record=record, replan=replan)


def _dry_run(client, source):
    """Send a record's change as a server-side dry run; the Source it holds for (a fresh one when the record changed
    since it was read: another control plane node of the same run, a run that died and whose node finished its write,
    an operator - read again and the edit applied to what is there). Raises RecordError."""
    for _attempt in range(CONFLICT_ATTEMPTS):
        try:
            send(client, source.record, source.after, dry_run=True)
            return source
        except RecordConflict:
            if source.replan is None:
                raise
            source = source.replan()
            if not source.changed:
                return source
    raise RecordError("%s kept changing under %d dry runs; run again" % (source.label, CONFLICT_ATTEMPTS))


def plan(yaml, run_command, kubeadm_bin, opts, edit, var=""):
    """The Sync of `edit` (a function changing a ClusterConfiguration dict in place, raising KubeadmError) applied to
    the file `opts['config']` (when it exists) and to kubeadm's record (per `opts['record']`). Refusals raise
    SyncError before anything is written: a document that does not parse, an edit kubeadm's validation refuses (its
    own words), a record the API server refuses as a dry run."""
    opts = dict(dict(config="", record="never", kubeconfig=ADMIN_CONF), **(opts or {}))
    sources = []
    path = opts.get("config") or ""
    text = read_text(path) if path else None
    if text is not None:
        try:
            docs = list(yaml.safe_load_all(text))
            cfg, changed = _edited(yaml, docs, edit)
        except (yaml.YAMLError, KubeadmError) as exc:
            raise SyncError("%s: %s" % (path, exc)) from None
        after = yaml.safe_dump_all(docs, default_flow_style=False, sort_keys=False) if changed else None
        sources.append(Source(path, text, after, cfg, path=path))
    try:
        client = connect(yaml, opts["record"], opts["kubeconfig"], var)
        record = read(client, CLUSTER, opts["record"]) if client else None
        if record is not None:
            sources.append(_cluster_record(yaml, client, record, edit, run_command, kubeadm_bin))
    except (yaml.YAMLError, KubeadmError, RecordError, IOError, OSError) as exc:
        raise SyncError("kubeadm's record (ConfigMap kube-system/%s): %s" % (CLUSTER[0], exc)) from None
    for i, source in enumerate(sources):
        if not source.changed:
            continue
        if not kubeadm_bin:
            if source.record is not None:
                raise SyncError("%s: no kubeadm on this node to validate the change with" % source.label)
            continue
        refused = validate(run_command, kubeadm_bin, source.after)
        if refused:
            raise SyncError("%s: kubeadm refuses the new ClusterConfiguration: %s" % (source.label, refused))
        if source.record is not None:
            try:
                sources[i] = _dry_run(client, source)
            except RecordError as exc:
                raise SyncError(str(exc)) from None
    return Sync(sources, client)


def _kubelet_record(yaml, client, record, doc, settings):
    """The kubelet-config record's Source: `settings` merged in, and how to do it again on a fresh read (the
    settings are the same fields on every node, so no validation is needed again)."""
    def replan():
        fresh = read(client, KUBELET, "always")
        return _kubelet_record(yaml, client, fresh, yaml.safe_load(fresh.text), settings)
    want = dict(doc, **settings)
    after = yaml.safe_dump(want, default_flow_style=False, sort_keys=False) if want != doc else None
    return Source(record.label, record.text, after, want, record=record, replan=replan)


def plan_kubelet(yaml, run_command, kubeadm_bin, opts, settings, var=""):
    """The Sync of `settings` (top-level KubeletConfiguration fields) merged into kubeadm's record of the kubelet's
    configuration - the kube-system/kubelet-config ConfigMap, which `kubeadm join` and `kubeadm upgrade node` write
    every node's /var/lib/kubelet/config.yaml from - checked with `kubeadm config validate` beside the cluster's own
    ClusterConfiguration and sent as a dry run. No record (mode never, or auto off a kubeadm control plane node): an
    empty Sync."""
    opts = dict(dict(record="never", kubeconfig=ADMIN_CONF), **(opts or {}))
    try:
        client = connect(yaml, opts["record"], opts["kubeconfig"], var)
        record = read(client, KUBELET, opts["record"]) if client else None
        if record is None:
            return Sync([], client)
        cluster = read(client, CLUSTER, "always")
        doc = yaml.safe_load(record.text)
        if not isinstance(doc, dict) or doc.get("kind") != "KubeletConfiguration":
            raise RecordError("%s does not hold a KubeletConfiguration" % record.label)
    except (yaml.YAMLError, RecordError) as exc:
        raise SyncError("kubeadm's record (ConfigMap kube-system/%s): %s" % (KUBELET[0], exc)) from None
    source = _kubelet_record(yaml, client, record, doc, settings)
    after = source.after
    if after is not None:
        if not kubeadm_bin:
            raise SyncError("%s: no kubeadm on this node to validate the change with" % source.label)
        refused = validate(run_command, kubeadm_bin, cluster.text.rstrip("\n") + "\n---\n" + after)
        if refused:
            raise SyncError("%s: kubeadm refuses the new KubeletConfiguration: %s" % (source.label, refused))
        try:
            source = _dry_run(client, source)
        except RecordError as exc:
            raise SyncError(str(exc)) from None
    return Sync([source], client)
