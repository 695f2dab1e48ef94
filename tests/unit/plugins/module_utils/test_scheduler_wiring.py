"""kube-scheduler's profile wired into its manifest and kubeadm's file: planned from the texts, then written."""

import os

import pytest
import yaml

from ansible_collections.kubescale.tuning.plugins.module_utils.kube import scheduler_wiring as w
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm_sync import Sync
from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import read_text

MANIFEST = """apiVersion: v1
kind: Pod
metadata:
  name: kube-scheduler
  namespace: kube-system
spec:
  containers:
  - command:
    - kube-scheduler
    - --authentication-kubeconfig=/etc/kubernetes/scheduler.conf
    - --bind-address=127.0.0.1
    - --kubeconfig=/etc/kubernetes/scheduler.conf
    - --leader-elect=true
    image: registry.k8s.io/kube-scheduler:v1.33.2
    name: kube-scheduler
    volumeMounts:
    - mountPath: /etc/kubernetes/scheduler.conf
      name: kubeconfig
      readOnly: true
  hostNetwork: true
  volumes:
  - hostPath:
      path: /etc/kubernetes/scheduler.conf
      type: FileOrCreate
    name: kubeconfig
"""
KUBEADM = """apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.33.2
"""


def params(tmp_path, **kw):
    p = dict(config_path=str(tmp_path / "kube-scheduler-config.yaml"), manifest=str(tmp_path / "kube-scheduler.yaml"),
             container="kube-scheduler", kubeadm=dict(config=str(tmp_path / "kubeadm-config.yaml")),
             require_wiring=True, profile="bin-packing", replace_default=False, strategy="MostAllocated",
             resources=[dict(name="cpu", weight=1), dict(name="memory", weight=1)],
             shape=[dict(utilization=0, score=0), dict(utilization=100, score=10)], fit_weight=1,
             balanced_allocation_weight=0, system_default_spreading=False, percentage_of_nodes_to_score=None,
             kube_version="", volume_name="kubescale-scheduler-config", wait_timeout=120, var_prefix="scheduler_binpack_")
    p.update(kw)
    return p


def files(tmp_path):
    (tmp_path / "kube-scheduler.yaml").write_text(MANIFEST)
    (tmp_path / "kubeadm-config.yaml").write_text(KUBEADM)


def no_record(edit):
    return Sync([], None)


def texts(tmp_path):
    return dict((n, read_text(str(tmp_path / n))) for n in sorted(os.listdir(str(tmp_path))))


def test_the_plan_reads_only_and_writes_the_config_then_kubeadms_file_then_the_manifest(tmp_path):
    files(tmp_path)
    before = texts(tmp_path)
    plan = w.plan(yaml, params(tmp_path), read_text, no_record)
    assert texts(tmp_path) == before
    assert [os.path.basename(x.path) for x in plan.writes] == [
        "kube-scheduler-config.yaml", "kubeadm-config.yaml", "kube-scheduler.yaml"]
    assert plan.changed and plan.manifest == str(tmp_path / "kube-scheduler.yaml")
    assert plan.api_version == "kubescheduler.config.k8s.io/v1" and plan.writes[0].old is None
    pod = yaml.safe_load(plan.writes[2].new)
    container = pod["spec"]["containers"][0]
    assert "--config=" + plan.container_config_path in container["command"]
    # kubeadm renders this manifest: the digest as the env kubeadm renders too, no annotation
    assert {"name": w.ENV, "value": plan.digest} in container["env"]
    assert w.ANNOTATION not in (pod["metadata"].get("annotations") or {})
    cluster = list(yaml.safe_load_all(plan.writes[1].new))[1]
    assert {"name": "config", "value": plan.container_config_path} in cluster["scheduler"]["extraArgs"]
    assert [d["header"] if "header" in d else d["before_header"] for d in plan.diff()] == [x.path for x in plan.writes]


def test_a_written_plan_leaves_nothing_to_plan_and_restarts_the_scheduler_once(tmp_path):
    files(tmp_path)
    plan = w.plan(yaml, params(tmp_path), read_text, no_record)
    waited = []
    assert w.write(plan, 30, wait=lambda *a, **kw: waited.append(kw["needle"]) or "") is True
    assert waited == ["--config=" + plan.container_config_path]
    again = w.plan(yaml, params(tmp_path), read_text, no_record)
    assert not again.changed and again.writes == [] and again.digest == plan.digest


def test_a_scheduler_that_does_not_come_back_puts_every_file_back(tmp_path):
    files(tmp_path)
    before = texts(tmp_path)
    plan = w.plan(yaml, params(tmp_path), read_text, no_record)
    with pytest.raises(w.WriteError, match=r"did not come back .* \(no new process with --config\)"):
        w.write(plan, 30, wait=lambda *a, **kw: "no new process")
    assert texts(tmp_path) == before


@pytest.mark.parametrize("name,text,message", [
    ("kube-scheduler.yaml", "kind: [", "scheduler_binpack_manifest: .* does not parse as YAML"),
    ("kube-scheduler.yaml", MANIFEST.replace("name: kube-scheduler\n    volumeMounts", "name: other\n    volumeMounts"),
     "scheduler_binpack_manifest: .*kube-scheduler"),
    ("kubeadm-config.yaml", "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n",
     "scheduler_binpack_kubeadm_config: "),
])
def test_a_file_that_does_not_parse_is_refused_naming_its_variable(tmp_path, name, text, message):
    files(tmp_path)
    (tmp_path / name).write_text(text)
    with pytest.raises(w.WiringError, match=message):
        w.plan(yaml, params(tmp_path), read_text, no_record)


def test_nothing_to_wire_is_refused_unless_wiring_is_optional(tmp_path):
    with pytest.raises(w.WiringError, match="scheduler_binpack_manifest: neither .* exists on this node"):
        w.plan(yaml, params(tmp_path), read_text, no_record)
    plan = w.plan(yaml, params(tmp_path, require_wiring=False, kube_version="1.33"), read_text, no_record)
    assert [os.path.basename(x.path) for x in plan.writes] == ["kube-scheduler-config.yaml"] and plan.manifest is None
