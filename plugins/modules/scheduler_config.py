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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm_sync import (
    ARGUMENT_SPEC as KUBEADM_SPEC,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm_sync import (
    SyncError,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm_sync import plan as kubeadm_plan
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.scheduler import (
    check_settings,
    parse_version,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.scheduler_wiring import (
    WiringError,
    WriteError,
    plan,
    write,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import read_text


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

    def record(edit):
        return kubeadm_plan(yaml, module.run_command, module.get_bin_path("kubeadm"), dict(p["kubeadm"], config=""),
                            edit, var)

    try:
        wiring = plan(yaml, p, read_text, record)
    except WiringError as exc:
        module.fail_json(msg="%s. Nothing was changed." % exc)
    except SyncError as exc:
        module.fail_json(msg="%skubeadm_record: %s. Nothing was changed." % (var, exc))
    result = wiring.result()
    if module._diff:
        result["diff"] = wiring.diff()
    if module.check_mode or not wiring.changed:
        module.exit_json(**result)
    try:
        result["restarted"] = write(wiring, p["wait_timeout"])
    except WriteError as exc:
        module.fail_json(msg=str(exc), **result)
    try:
        wiring.sync.write()  # kubeadm's record last: once the scheduler runs with what it records
    except SyncError as exc:
        module.fail_json(msg="%skubeadm_record: %s. The files are written and the scheduler runs with them: run "
                             "again to record it." % (var, exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
