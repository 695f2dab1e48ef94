#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: scheduler_config
short_description: Give kube-scheduler a bin-packing profile (NodeResourcesFit MostAllocated) and wire its --config
version_added: "0.5.0"
description:
  - In one call, owns the whole of kube-scheduler's bin-packing tuning on a control plane node, as YAML data, in
    three files.
  - The KubeSchedulerConfiguration file. The profile O(profile) (or C(default-scheduler) itself with
    O(replace_default)) gets NodeResourcesFit's C(scoringStrategy) (O(strategy), O(resources) weights), the score
    weights of NodeResourcesFit and NodeResourcesBalancedAllocation (0 disables it), and the config's
    C(percentageOfNodesToScore). Every other profile, plugin and plugin argument of an existing file is kept.
  - kube-scheduler's static pod manifest (kubeadm's). C(--config), a read-only hostPath volume of the file, and the
    config's digest, so the kubelet restarts the scheduler when only the file changed - as an annotation, or, where
    kubeadm renders the manifest, as the environment variable C(KUBESCALE_SCHEDULER_CONFIG_SHA256).
  - With O(kubeadm), the ClusterConfiguration kubeadm renders the manifest from - a file on the node, kubeadm's record
    in the cluster - gets the same (C(scheduler.extraArgs), C(scheduler.extraVolumes), C(scheduler.extraEnvs)), and the
    manifest is put in kubeadm's order, so C(kubeadm upgrade) finds it equal and leaves the scheduler running.
  - kube-scheduler ignores C(--kubeconfig), C(--leader-elect*), C(--kube-api-*) and C(--profiling) once it has
    C(--config); their values from the manifest are copied into the file where it does not set them (the file wins).
  - A manifest that already passes C(--config) keeps its file. The module merges into the node's file behind the
    hostPath volume that holds that path.
  - A new file is written in C(kubescheduler.config.k8s.io/v1) for kube-scheduler 1.25 and later, C(v1beta3) for 1.23
    and 1.24, by the version on the manifest's image tag (or O(kube_version)); an existing file keeps its version.
  - Every setting and every file is checked before anything is written - a weight outside the scheduler's range, an
    unknown strategy, a name that is not a resource (the scheduler itself would take a misspelt one and weigh
    nothing), a bad shape, an unparsable file, a ClusterConfiguration C(kubeadm config validate) refuses, a record the
    API server refuses as a dry run. Then the config is written, then kubeadm's file, then the manifest, and kubeadm's
    record last, once the scheduler runs with it.
  - When the manifest changed, the module waits until a new kube-scheduler process runs with that C(--config) and
    answers C(/healthz) (which includes its leader election), up to O(wait_timeout) seconds. If it does not, the three
    files are put back as they were (the kubelet restarts the old scheduler) and the module fails.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  config_path:
    description:
      - The config file to write when the manifest has no C(--config) yet (the container sees it at the same path).
    type: path
    default: /etc/kubernetes/kube-scheduler-config.yaml
    aliases: [path]
  manifest:
    description: kube-scheduler's static pod manifest; skipped when it does not exist.
    type: path
    default: /etc/kubernetes/manifests/kube-scheduler.yaml
  container:
    description: The scheduler's container in the manifest.
    type: str
    default: kube-scheduler
  require_wiring:
    description: Fail (before any change) when neither O(manifest) nor O(kubeadm.config) exists.
    type: bool
    default: true
  profile:
    description: The profile's schedulerName, which batch pods select with C(spec.schedulerName).
    type: str
    default: bin-packing
  replace_default:
    description: Tune C(default-scheduler) itself (every pod packs) instead of adding O(profile) beside it.
    type: bool
    default: false
  strategy:
    description: NodeResourcesFit's scoring strategy.
    type: str
    choices: [MostAllocated, RequestedToCapacityRatio]
    default: MostAllocated
  resources:
    description: The resources the strategy weighs, each C({name, weight}) with weight 1..100.
    type: list
    elements: dict
    default: [{name: cpu, weight: 1}, {name: memory, weight: 1}, {name: nvidia.com/gpu, weight: 1}]
  shape:
    description: With V(RequestedToCapacityRatio), the C({utilization, score}) points (utilization 0..100 increasing, score 0..10).
    type: list
    elements: dict
    default: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]
  fit_weight:
    description: NodeResourcesFit's score weight (1..100) against the other score plugins.
    type: int
    default: 1
  balanced_allocation_weight:
    description: NodeResourcesBalancedAllocation's score weight; 0 disables it (it pulls against packing).
    type: int
    default: 0
  system_default_spreading:
    description:
      - Keep the scheduler's system default topology spreading (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway)
        in the profile. false sets PodTopologySpread's C(defaultingType=List) with no C(defaultConstraints) there -
        its score (weight 2) would spread the pods of Deployments, ReplicaSets and StatefulSets against the packing.
        Pods' own C(topologySpreadConstraints) still apply.
    type: bool
    default: false
  percentage_of_nodes_to_score:
    description: The config's C(percentageOfNodesToScore) (0 is the scheduler's adaptive default); null leaves it.
    type: int
  kube_version:
    description: kube-scheduler's version (C(1.30) or C(v1.30.2)); empty takes it from the manifest's image tag.
    type: str
    default: ""
  volume_name:
    description: The hostPath volume's name in the manifest and in kubeadm's extraVolumes.
    type: str
    default: kubescale-scheduler-config
  wait_timeout:
    description: Seconds to wait for the restarted scheduler; 0 does not wait.
    type: int
    default: 120
  var_prefix:
    description:
      - Put before an option's name in error messages. A role passes its variable prefix (C(scheduler_binpack_)), so
        a message names the variable the user set.
    type: str
    default: ""
extends_documentation_fragment:
  - kubescale.tuning.attributes
  - kubescale.tuning.kubeadm
attributes:
  check_mode:
    support: full
    details: Reads and merges every file as in a real run and reports the same changes; writes and waits for nothing.
  diff_mode:
    support: full
    details: One diff per file that changes (config, kubeadm's configuration, manifest, kubeadm's record).
  platform:
    platforms: posix
requirements:
  - PyYAML on the node (Debian/Ubuntu package python3-yaml).
"""

EXAMPLES = r"""
- name: A bin-packing profile beside default-scheduler (batch pods set schedulerName bin-packing)
  kubescale.tuning.scheduler_config:
    config_path: /etc/kubernetes/kube-scheduler-config.yaml
    kubeadm:
      record: auto
    resources:
      - {name: cpu, weight: 1}
      - {name: memory, weight: 1}
      - {name: nvidia.com/gpu, weight: 3}
    percentage_of_nodes_to_score: 100

- name: Every pod packs
  kubescale.tuning.scheduler_config:
    replace_default: true
"""

RETURN = r"""
changed_files:
  description: The files that were (or in check mode would be) rewritten.
  returned: always
  type: list
  elements: str
config_path:
  description: The config file on the node.
  returned: always
  type: str
  sample: /etc/kubernetes/kube-scheduler-config.yaml
container_config_path:
  description: Where the scheduler's container reads it (its C(--config)).
  returned: always
  type: str
api_version:
  description: The config file's apiVersion.
  returned: always
  type: str
  sample: kubescheduler.config.k8s.io/v1
config_sha256:
  description: The digest (16 hex digits) of the config's text, as the manifest carries it.
  returned: always
  type: str
wired:
  description: Which of the manifest, kubeadm's configuration file and kubeadm's record were found and wired.
  returned: always
  type: list
  elements: str
carried_flags:
  description:
    - The manifest's flags that kube-scheduler ignores once it has C(--config) (C(--kubeconfig), C(--leader-elect*),
      C(--kube-api-*), C(--profiling)), whose values were copied into the file because it did not set them.
  returned: always
  type: list
  elements: str
  sample: [--kubeconfig, --leader-elect]
restarted:
  description: The scheduler was restarted and came back on the new config.
  returned: always
  type: bool
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils._atomic import atomic_write, read_text
from ansible_collections.kubescale.tuning.plugins.module_utils._kubeadm import (
    KubeadmError,
    arg_names,
    cluster_configuration,
    get_args,
    set_args,
    set_extra_env,
    set_extra_volume,
)
from ansible_collections.kubescale.tuning.plugins.module_utils._kubeadm_sync import (
    ARGUMENT_SPEC as KUBEADM_SPEC,
)
from ansible_collections.kubescale.tuning.plugins.module_utils._kubeadm_sync import (
    SyncError,
)
from ansible_collections.kubescale.tuning.plugins.module_utils._kubeadm_sync import plan as kubeadm_plan
from ansible_collections.kubescale.tuning.plugins.module_utils._scheduler import (
    SchedulerConfigError,
    api_version_for,
    carry_flags,
    check_settings,
    content_hash,
    merge,
    parse_version,
    resolve_host_path,
    version_from_image,
)
from ansible_collections.kubescale.tuning.plugins.module_utils._static_pod import (
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

# The config file's digest in the manifest, so that the kubelet restarts the scheduler when only the file changed: an
# annotation, or, where kubeadm renders the manifest, an environment variable kubeadm renders too (scheduler.extraEnvs).
ANNOTATION = "kubescale.io/scheduler-config-sha256"
ENV = "KUBESCALE_SCHEDULER_CONFIG_SHA256"


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


def healthz_url(flags):
    host = flags.get("--bind-address") or "127.0.0.1"
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    return "https://%s:%s/healthz" % (host, flags.get("--secure-port") or "10259")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            config_path=dict(type="path", default="/etc/kubernetes/kube-scheduler-config.yaml", aliases=["path"]),
            manifest=dict(type="path", default="/etc/kubernetes/manifests/kube-scheduler.yaml"),
            container=dict(type="str", default="kube-scheduler"),
            kubeadm=KUBEADM_SPEC,
            require_wiring=dict(type="bool", default=True),
            profile=dict(type="str", default="bin-packing"),
            replace_default=dict(type="bool", default=False),
            strategy=dict(type="str", default="MostAllocated", choices=["MostAllocated", "RequestedToCapacityRatio"]),
            resources=dict(type="list", elements="dict", default=[
                dict(name="cpu", weight=1), dict(name="memory", weight=1), dict(name="nvidia.com/gpu", weight=1)]),
            shape=dict(type="list", elements="dict", default=[
                dict(utilization=0, score=0), dict(utilization=100, score=10)]),
            fit_weight=dict(type="int", default=1),
            balanced_allocation_weight=dict(type="int", default=0),
            system_default_spreading=dict(type="bool", default=False),
            percentage_of_nodes_to_score=dict(type="int"),
            kube_version=dict(type="str", default=""),
            volume_name=dict(type="str", default="kubescale-scheduler-config"),
            wait_timeout=dict(type="int", default=120),
            var_prefix=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    p = module.params
    var = p["var_prefix"]
    problems = check_settings(p["strategy"], p["resources"], p["fit_weight"], p["balanced_allocation_weight"],
                              p["percentage_of_nodes_to_score"], p["shape"], p["profile"], prefix=var)
    if p["kube_version"] and parse_version(p["kube_version"]) is None:
        problems.append("%skube_version: %r is not a version (1.30 or v1.30.2)" % (var, p["kube_version"]))
    if p["wait_timeout"] < 0:
        problems.append("%swait_timeout: %d is below 0" % (var, p["wait_timeout"]))
    if problems:
        module.fail_json(msg="; ".join(problems) + ". Nothing was changed.", problems=problems)
    try:
        import yaml
    except ImportError:
        module.fail_json(msg="scheduler_config needs PyYAML on the node (Debian/Ubuntu package python3-yaml)")

    def load(path, what):
        text = read_text(path) if path else None
        if text is None:
            return None, None
        try:
            return text, list(yaml.safe_load_all(text))
        except yaml.YAMLError as exc:
            module.fail_json(msg="%s%s: %s does not parse as YAML: %s. Nothing was changed." % (var, what, path, exc))

    manifest_text, manifest_docs = load(p["manifest"], "manifest")
    kubeadm_path = p["kubeadm"].get("config") or ""
    kubeadm_text, kubeadm_docs = load(kubeadm_path, "kubeadm_config")
    if manifest_text is None and kubeadm_text is None and p["require_wiring"]:
        module.fail_json(msg="%smanifest: neither %s nor %skubeadm_config (%s) exists on this node: kube-scheduler's "
                             "--config could not be wired. Nothing was changed."
                             % (var, p["manifest"], var, kubeadm_path or "not set"))
    pod = container = cluster = None
    pod_flags = {}
    version = parse_version(p["kube_version"]) if p["kube_version"] else None
    host_path, container_path, own_volume = p["config_path"], p["config_path"], True
    try:
        if manifest_docs is not None:
            if len(manifest_docs) != 1:
                raise PodError("expected one YAML document")
            pod = manifest_docs[0]
            container = find_container(pod, p["container"])
            pod_flags = flag_values(container.get("command") or container.get("args") or [])
            version = version or version_from_image(container.get("image"))
            current = pod_flags.get("--config")
            if current:
                mounted = volumes(pod, container)
                resolved = resolve_host_path(current, mounted)
                if resolved is None:
                    raise PodError("--config=%s is on no hostPath volume the container mounts" % current)
                own_volume = any(v["name"] == p["volume_name"] for v in mounted)
                if not own_volume:
                    host_path, container_path = resolved, current
    except PodError as exc:
        module.fail_json(msg="%smanifest: %s: %s. Nothing was changed." % (var, p["manifest"], exc))
    try:
        if kubeadm_docs is not None:
            cluster = cluster_configuration(kubeadm_docs)
            version = version or parse_version(cluster.get("kubernetesVersion"))
            current = get_args(cluster, "scheduler").get("config")
            if pod is None and current and current != p["config_path"]:
                vols = [dict(name=v.get("name"), host_path=v.get("hostPath"), mount_path=v.get("mountPath"))
                        for v in (cluster.get("scheduler") or {}).get("extraVolumes") or [] if isinstance(v, dict)]
                resolved = resolve_host_path(current, vols)
                if resolved is None:
                    raise KubeadmError("scheduler.extraArgs.config=%s is on no scheduler.extraVolumes entry" % current)
                if not any(v["name"] == p["volume_name"] for v in vols):
                    host_path, container_path, own_volume = resolved, current, False
    except KubeadmError as exc:
        module.fail_json(msg="%skubeadm_config: %s: %s. Nothing was changed." % (var, kubeadm_path, exc))

    config_text, config_docs = load(host_path, "config_path")
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
        module.fail_json(msg="%sconfig_path: %s: %s. Nothing was changed." % (var, host_path, exc))
    if cfg == before_cfg:
        new_config_text = config_text
    else:
        new_config_text = yaml.safe_dump(cfg, default_flow_style=False, sort_keys=False)
    digest = content_hash(new_config_text)

    writes = []  # (path, old text, new text, mode), in the order they are written
    if new_config_text != config_text:
        writes.append((host_path, config_text, new_config_text, 0o644))
    wired = []
    edit = kubeadm_edit(container_path, own_volume, p["volume_name"], host_path, digest)
    if cluster is not None:
        wired.append(kubeadm_path)
        before_cluster = yaml.safe_dump(cluster, sort_keys=True)
        try:
            edit(cluster)
        except KubeadmError as exc:
            module.fail_json(msg="%skubeadm_config: %s: %s. Nothing was changed." % (var, kubeadm_path, exc))
        if yaml.safe_dump(cluster, sort_keys=True) != before_cluster:
            writes.append((kubeadm_path, kubeadm_text,
                           yaml.safe_dump_all(kubeadm_docs, default_flow_style=False, sort_keys=False), 0o600))
    try:
        sync = kubeadm_plan(yaml, module.run_command, module.get_bin_path("kubeadm"), dict(p["kubeadm"], config=""),
                            edit, var)
    except SyncError as exc:
        module.fail_json(msg="%skubeadm_record: %s. Nothing was changed." % (var, exc))
    wired += sync.labels
    order = sync.extra_names("scheduler") if sync.sources else (
        arg_names(cluster, "scheduler") if cluster is not None else None)
    manifest_changed = False
    if pod is not None:
        wired.append(p["manifest"])
        key = "command" if container.get("command") else "args"
        argv, changed = set_flags(container.get(key) or [], {"--config": container_path})
        container[key] = argv
        mounted = own_volume and set_mount(pod, container, p["volume_name"], host_path, container_path)
        if order is None:
            noted = set_annotation(pod, ANNOTATION, digest)
        else:  # kubeadm renders this manifest: the digest as the env kubeadm renders too, no annotation of ours
            noted = set_annotation(pod, ANNOTATION, None)
            noted = set_env(container, ENV, digest) or noted
            noted = kubeadm_order(pod, container, key, order) or noted
        if changed or mounted or noted:
            manifest_changed = True
            writes.append((p["manifest"], manifest_text,
                           yaml.safe_dump(pod, default_flow_style=False, sort_keys=False), 0o600))

    result = dict(changed=bool(writes or sync.changed), changed_files=[w[0] for w in writes] + sync.changed,
                  config_path=host_path,
                  container_config_path=container_path, api_version=api_version, config_sha256=digest, wired=wired,
                  carried_flags=carried, restarted=False)
    if module._diff:
        result["diff"] = [dict(before=old or "", after=new, before_header=path, after_header=path)
                          for path, old, new, _mode in writes] + sync.diffs()
    if module.check_mode or not (writes or sync.changed):
        module.exit_json(**result)

    def put_back(done):
        for path, old, _new, mode in reversed(done):
            if old is None:
                os.unlink(path)
            else:
                atomic_write(path, old, mode=mode)

    done = []
    written_at = None
    try:
        for path, old, new, mode in writes:
            parent = os.path.dirname(path)
            if parent and not os.path.isdir(parent):
                os.makedirs(parent, 0o755)
            if path == p["manifest"]:
                written_at = uptime_ticks()
            atomic_write(path, new, mode=mode)
            done.append((path, old, new, mode))
    except (IOError, OSError) as exc:
        put_back(done)
        module.fail_json(msg="writing %s failed: %s; the files written before it were put back" % (path, exc),
                         **result)
    if manifest_changed and p["wait_timeout"] > 0:
        # --bind-address and --secure-port: the module leaves both as they were
        why = wait_restarted("kube-scheduler", written_at, answers_ok(healthz_url(pod_flags)), p["wait_timeout"],
                             needle="--config=" + container_path)
        if why:
            put_back(done)
            module.fail_json(msg="kube-scheduler did not come back on %s within %ds (%s): %s were put back as "
                                 "they were, and the kubelet restarts the scheduler on the old manifest"
                             % (container_path, p["wait_timeout"],
                                "no new process with --config" if why.startswith("no new") else "/healthz is not ok",
                                ", ".join(w[0] for w in done)), **result)
        result["restarted"] = True
    try:
        sync.write()  # kubeadm's record last: once the scheduler runs with what it records
    except SyncError as exc:
        module.fail_json(msg="%skubeadm_record: %s. The files are written and the scheduler runs with them: run "
                             "again to record it." % (var, exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
