# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: where kube-scheduler's bin-packing profile is written, planned before anything is.

`plan` reads (through the caller's `read`) the scheduler's manifest, kubeadm's configuration file and the config file
the scheduler's --config names, merges the profile (module_utils.kube.scheduler) and decides every write: the config file,
kubeadm's file, kubeadm's record (through the caller's `record`, which returns a module_utils.kube.kubeadm_sync.Sync) and
the manifest, in the order they are written. `write` writes a plan, putting back what it wrote when a file cannot be
written or the scheduler does not come back on its new manifest.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
from dataclasses import dataclass, field
from typing import Callable, Dict, List, NamedTuple, Optional

from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm import (
    KubeadmError,
    arg_names,
    cluster_configuration,
    get_args,
    set_args,
    set_extra_env,
    set_extra_volume,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.scheduler import (
    SchedulerConfigError,
    api_version_for,
    carry_flags,
    content_hash,
    merge,
    parse_version,
    resolve_host_path,
    version_from_image,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.static_pod import (
    PodError,
    answers_ok,
    find_container,
    flag_values,
    kubeadm_order,
    set_annotation,
    set_env,
    set_flags,
    set_mount,
    uptime_ticks,
    volumes,
    wait_restarted,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import atomic_write

# The config file's digest in the manifest, so that the kubelet restarts the scheduler when only the file changed: an
# annotation, or, where kubeadm renders the manifest, an environment variable kubeadm renders too (scheduler.extraEnvs).
ANNOTATION = "kubescale.io/scheduler-config-sha256"
ENV = "KUBESCALE_SCHEDULER_CONFIG_SHA256"


class WiringError(Exception):
    """A refusal before anything is written; the message names the module option (with the caller's prefix)."""


class Write(NamedTuple):
    """One file a plan writes: its text now (None: absent), the text it gets, its mode."""

    path: str
    old: Optional[str]
    new: str
    mode: int


@dataclass
class Plan:
    """Everything the profile changes, decided before anything is written."""

    config_path: str  # the config file on the node
    container_config_path: str  # where the scheduler's container reads it (--config)
    api_version: str
    digest: str
    carried_flags: List[str]
    wired: List[str]  # the places --config is wired in: the manifest, kubeadm's file, kubeadm's record
    writes: List[Write]  # the files, in the order they are written
    sync: object  # kubeadm's record: a module_utils.kube.kubeadm_sync.Sync, written after the files
    manifest: Optional[str]  # the manifest's path when the plan rewrites it (the scheduler restarts), else None
    pod_flags: Dict[str, str] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.writes or self.sync.changed)

    def result(self) -> dict:
        return dict(changed=self.changed, changed_files=[w.path for w in self.writes] + self.sync.changed,
                    config_path=self.config_path, container_config_path=self.container_config_path,
                    api_version=self.api_version, config_sha256=self.digest, wired=list(self.wired),
                    carried_flags=self.carried_flags, restarted=False)

    def diff(self) -> List[dict]:
        return [dict(before=w.old or "", after=w.new, before_header=w.path, after_header=w.path)
                for w in self.writes] + self.sync.diffs()


def kubeadm_edit(container_path, own_volume, volume_name, host_path, digest):
    """The edit of a ClusterConfiguration that wires the scheduler's --config (and its volume) as the manifest has it,
    the digest in scheduler.extraEnvs (v1beta4)."""
    def edit(cfg):
        set_args(cfg, "scheduler", {"config": container_path})
        if own_volume:
            set_extra_volume(cfg, "scheduler", volume_name, host_path, container_path)
        if str(cfg.get("apiVersion", "")).endswith("/v1beta4"):
            set_extra_env(cfg, "scheduler", ENV, digest)
    return edit


def healthz_url(flags: Dict[str, str]) -> str:
    host = flags.get("--bind-address") or "127.0.0.1"
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    return "https://%s:%s/healthz" % (host, flags.get("--secure-port") or "10259")


def _load(yaml, read, path, what, var):
    text = read(path) if path else None
    if text is None:
        return None, None
    try:
        return text, list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise WiringError("%s%s: %s does not parse as YAML: %s" % (var, what, path, exc)) from None


def _config_from_manifest(docs, p, where):
    """(pod, container, its flags, version, host path, container path, own volume) from the manifest's documents."""
    if len(docs) != 1:
        raise PodError("expected one YAML document")
    pod = docs[0]
    container = find_container(pod, p["container"])
    flags = flag_values(container.get("command") or container.get("args") or [])
    host_path, container_path, own_volume = where
    current = flags.get("--config")
    if current:
        mounted = volumes(pod, container)
        resolved = resolve_host_path(current, mounted)
        if resolved is None:
            raise PodError("--config=%s is on no hostPath volume the container mounts" % current)
        own_volume = any(v["name"] == p["volume_name"] for v in mounted)
        if not own_volume:
            host_path, container_path = resolved, current
    return pod, container, flags, version_from_image(container.get("image")), (host_path, container_path, own_volume)


def _config_from_kubeadm(cluster, p, pod, where):
    """(host path, container path, own volume): kubeadm's file names the config where there is no manifest."""
    current = get_args(cluster, "scheduler").get("config")
    if pod is None and current and current != p["config_path"]:
        vols = [dict(name=v.get("name"), host_path=v.get("hostPath"), mount_path=v.get("mountPath"))
                for v in (cluster.get("scheduler") or {}).get("extraVolumes") or [] if isinstance(v, dict)]
        resolved = resolve_host_path(current, vols)
        if resolved is None:
            raise KubeadmError("scheduler.extraArgs.config=%s is on no scheduler.extraVolumes entry" % current)
        if not any(v["name"] == p["volume_name"] for v in vols):
            return resolved, current, False
    return where


def plan(yaml, p: dict, read: Callable[[str], Optional[str]], record: Callable) -> Plan:
    """The plan for the module's parameters `p`. `record(edit)` plans kubeadm's record with `edit` and returns its
    Sync (raising module_utils.kube.kubeadm_sync.SyncError). Raises WiringError, with nothing written."""
    var = p["var_prefix"]
    kubeadm_path = p["kubeadm"].get("config") or ""
    manifest_text, manifest_docs = _load(yaml, read, p["manifest"], "manifest", var)
    kubeadm_text, kubeadm_docs = _load(yaml, read, kubeadm_path, "kubeadm_config", var)
    if manifest_text is None and kubeadm_text is None and p["require_wiring"]:
        raise WiringError("%smanifest: neither %s nor %skubeadm_config (%s) exists on this node: kube-scheduler's "
                          "--config could not be wired" % (var, p["manifest"], var, kubeadm_path or "not set"))
    pod = container = cluster = None
    pod_flags = {}
    version = parse_version(p["kube_version"]) if p["kube_version"] else None
    where = (p["config_path"], p["config_path"], True)
    if manifest_docs is not None:
        try:
            pod, container, pod_flags, image_version, where = _config_from_manifest(manifest_docs, p, where)
        except PodError as exc:
            raise WiringError("%smanifest: %s: %s" % (var, p["manifest"], exc)) from None
        version = version or image_version
    if kubeadm_docs is not None:
        try:
            cluster = cluster_configuration(kubeadm_docs)
            version = version or parse_version(cluster.get("kubernetesVersion"))
            where = _config_from_kubeadm(cluster, p, pod, where)
        except KubeadmError as exc:
            raise WiringError("%skubeadm_config: %s: %s" % (var, kubeadm_path, exc)) from None
    host_path, container_path, own_volume = where

    config_text, config_docs = _load(yaml, read, host_path, "config_path", var)
    try:
        if config_docs is not None and len([d for d in config_docs if d is not None]) != 1:
            raise SchedulerConfigError("expected one YAML document")
        old_cfg = config_docs[0] if config_docs else None
        before_cfg = yaml.safe_load(config_text) if config_text else None
        api_version = old_cfg.get("apiVersion") if isinstance(old_cfg, dict) else api_version_for(version)
        cfg = merge(old_cfg, api_version, p["profile"], p["strategy"], p["resources"], p["fit_weight"],
                    p["balanced_allocation_weight"], p["percentage_of_nodes_to_score"], p["shape"],
                    p["replace_default"], default_spreading=p["system_default_spreading"])
        carried = carry_flags(cfg, pod_flags)
    except SchedulerConfigError as exc:
        raise WiringError("%sconfig_path: %s: %s" % (var, host_path, exc)) from None
    new_config_text = config_text
    if cfg != before_cfg:
        new_config_text = yaml.safe_dump(cfg, default_flow_style=False, sort_keys=False)
    digest = content_hash(new_config_text)

    writes, wired = [], []
    if new_config_text != config_text:
        writes.append(Write(host_path, config_text, new_config_text, 0o644))
    edit = kubeadm_edit(container_path, own_volume, p["volume_name"], host_path, digest)
    if cluster is not None:
        wired.append(kubeadm_path)
        before_cluster = yaml.safe_dump(cluster, sort_keys=True)
        try:
            edit(cluster)
        except KubeadmError as exc:
            raise WiringError("%skubeadm_config: %s: %s" % (var, kubeadm_path, exc)) from None
        if yaml.safe_dump(cluster, sort_keys=True) != before_cluster:
            writes.append(Write(kubeadm_path, kubeadm_text,
                                yaml.safe_dump_all(kubeadm_docs, default_flow_style=False, sort_keys=False), 0o600))
    sync = record(edit)
    wired += sync.labels
    order = sync.extra_names("scheduler") if sync.sources else (
        arg_names(cluster, "scheduler") if cluster is not None else None)
    manifest = None
    if pod is not None:
        wired.append(p["manifest"])
        if _wire_manifest(pod, container, p["volume_name"], own_volume, host_path, container_path, digest, order):
            manifest = p["manifest"]
            writes.append(Write(manifest, manifest_text,
                                yaml.safe_dump(pod, default_flow_style=False, sort_keys=False), 0o600))
    return Plan(config_path=host_path, container_config_path=container_path, api_version=api_version, digest=digest,
                carried_flags=carried, wired=wired, writes=writes, sync=sync, manifest=manifest, pod_flags=pod_flags)


def _wire_manifest(pod, container, volume_name, own_volume, host_path, container_path, digest, order):
    """--config, its volume and the digest in the scheduler's pod (in kubeadm's order where kubeadm renders it, the
    digest then as the env kubeadm renders, no annotation of ours); whether anything changed."""
    key = "command" if container.get("command") else "args"
    argv, changed = set_flags(container.get(key) or [], {"--config": container_path})
    container[key] = argv
    mounted = own_volume and set_mount(pod, container, volume_name, host_path, container_path)
    if order is None:
        noted = set_annotation(pod, ANNOTATION, digest)
    else:
        noted = set_annotation(pod, ANNOTATION, None)
        noted = set_env(container, ENV, digest) or noted
        noted = kubeadm_order(pod, container, key, order) or noted
    return bool(changed or mounted or noted)


class WriteError(Exception):
    """A write that failed, with what was put back; `restarted` tells whether the scheduler runs the new files."""

    def __init__(self, msg, restarted=False):
        super().__init__(msg)
        self.restarted = restarted


def _put_back(done: List[Write]) -> None:
    for w in reversed(done):
        if w.old is None:
            os.unlink(w.path)
        else:
            atomic_write(w.path, w.old, mode=w.mode)


def write(plan_: Plan, wait_timeout: int, wait=wait_restarted) -> bool:
    """Write a plan's files in order, wait for the scheduler to come back on a rewritten manifest (when wait_timeout),
    then kubeadm's record, last. Returns whether the scheduler restarted. Raises WriteError: a file that cannot be
    written, or a scheduler that does not come back, puts back every file written before."""
    done, written_at = [], None
    for w in plan_.writes:
        try:
            parent = os.path.dirname(w.path)
            if parent and not os.path.isdir(parent):
                os.makedirs(parent, 0o755)
            if w.path == plan_.manifest:
                written_at = uptime_ticks()
            atomic_write(w.path, w.new, mode=w.mode)
        except (IOError, OSError) as exc:
            _put_back(done)
            raise WriteError("writing %s failed: %s; the files written before it were put back" % (w.path, exc)) from None
        done.append(w)
    restarted = False
    if plan_.manifest and wait_timeout > 0:
        # --bind-address and --secure-port: the plan leaves both as they were
        why = wait("kube-scheduler", written_at, answers_ok(healthz_url(plan_.pod_flags)), wait_timeout,
                   needle="--config=" + plan_.container_config_path)
        if why:
            _put_back(done)
            raise WriteError("kube-scheduler did not come back on %s within %ds (%s): %s were put back as they were, "
                             "and the kubelet restarts the scheduler on the old manifest"
                             % (plan_.container_config_path, wait_timeout,
                                "no new process with --config" if why.startswith("no new") else "/healthz is not ok",
                                ", ".join(w.path for w in done)))
        restarted = True
    return restarted
