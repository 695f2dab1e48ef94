"""kube-scheduler's bin-packing profile merged into a KubeSchedulerConfiguration, and the settings' checks."""

import copy

import pytest
import yaml

from ansible_collections.kubescale.tuning.plugins.module_utils.kube import kubeadm as k
from ansible_collections.kubescale.tuning.plugins.module_utils.kube import scheduler as s
from ansible_collections.kubescale.tuning.plugins.module_utils.kube import static_pod as sp

RES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 3}]
SHAPE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]

USER = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      disabled:
      - name: ImageLocality
  pluginConfig:
  - name: NodeResourcesFit
    args:
      ignoredResources: [example.com/foo]
  - name: PodTopologySpread
    args:
      defaultingType: List
- schedulerName: gpu-batch
  plugins:
    multiPoint:
      enabled:
      - name: MyPlugin
"""


def merged(cfg=None, **kw):
    args = dict(api_version="kubescheduler.config.k8s.io/v1", profile="bin-packing", strategy="MostAllocated",
                resources=RES, fit_weight=1, balanced_weight=0, percentage=100, shape=SHAPE, replace_default=False)
    args.update(kw)
    return s.merge(cfg, **args)


def profile(cfg, name):
    return [p for p in cfg["profiles"] if p["schedulerName"] == name][0]


def test_a_new_file_keeps_default_scheduler_and_adds_the_profile():
    cfg = merged()
    assert cfg["apiVersion"] == "kubescheduler.config.k8s.io/v1" and cfg["kind"] == "KubeSchedulerConfiguration"
    assert [p["schedulerName"] for p in cfg["profiles"]] == ["default-scheduler", "bin-packing"]
    assert profile(cfg, "default-scheduler") == {"schedulerName": "default-scheduler"}
    bp = profile(cfg, "bin-packing")
    assert bp["pluginConfig"] == [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
        "type": "MostAllocated", "resources": RES}}}]
    assert bp["plugins"]["score"] == {"enabled": [{"name": "NodeResourcesFit", "weight": 1}],
                                      "disabled": [{"name": "NodeResourcesBalancedAllocation"}]}
    assert cfg["percentageOfNodesToScore"] == 100


def test_the_users_profiles_plugins_and_arguments_are_kept():
    cfg = merged(yaml.safe_load(USER), replace_default=True, percentage=None)
    want = yaml.safe_load(USER)
    assert cfg["clientConnection"] == want["clientConnection"] and "percentageOfNodesToScore" not in cfg
    assert profile(cfg, "gpu-batch") == profile(want, "gpu-batch")
    d = profile(cfg, "default-scheduler")
    fit = [c for c in d["pluginConfig"] if c["name"] == "NodeResourcesFit"][0]
    assert fit["args"]["ignoredResources"] == ["example.com/foo"]
    assert fit["args"]["scoringStrategy"]["type"] == "MostAllocated"
    assert [c for c in d["pluginConfig"] if c["name"] == "PodTopologySpread"] == [
        {"name": "PodTopologySpread", "args": {"defaultingType": "List"}}]
    assert d["plugins"]["score"]["disabled"] == [{"name": "ImageLocality"},
                                                 {"name": "NodeResourcesBalancedAllocation"}]
    assert len(cfg["profiles"]) == 2


def test_merging_twice_changes_nothing_and_a_weight_moves_the_plugin_out_of_disabled():
    once = merged(yaml.safe_load(USER))
    assert merged(copy.deepcopy(once)) == once
    weighted = merged(copy.deepcopy(once), balanced_weight=2)
    score = profile(weighted, "bin-packing")["plugins"]["score"]
    assert {"name": "NodeResourcesBalancedAllocation", "weight": 2} in score["enabled"]
    assert "disabled" not in score
    back = merged(copy.deepcopy(weighted))
    assert back == once


def test_requested_to_capacity_ratio_carries_its_shape():
    cfg = merged(strategy="RequestedToCapacityRatio")
    strategy = profile(cfg, "bin-packing")["pluginConfig"][0]["args"]["scoringStrategy"]
    assert strategy["type"] == "RequestedToCapacityRatio"
    assert strategy["requestedToCapacityRatio"] == {"shape": SHAPE}


def test_a_file_that_disables_every_score_plugin_or_is_not_a_scheduler_config_is_refused():
    cfg = yaml.safe_load(USER)
    cfg["profiles"][0]["plugins"]["score"]["disabled"] = [{"name": "*"}]
    with pytest.raises(s.SchedulerConfigError, match=r"disables every score plugin"):
        merged(cfg, replace_default=True)
    with pytest.raises(s.SchedulerConfigError, match=r"not a KubeSchedulerConfiguration"):
        merged({"kind": "KubeletConfiguration"})
    with pytest.raises(s.SchedulerConfigError, match=r"apiVersion 'kubescheduler.config.k8s.io/v1alpha1'"):
        merged({"kind": "KubeSchedulerConfiguration", "apiVersion": "kubescheduler.config.k8s.io/v1alpha1"})
    with pytest.raises(s.SchedulerConfigError, match=r"profiles\[bin-packing\].pluginConfig is not a list"):
        merged({"kind": "KubeSchedulerConfiguration", "apiVersion": "kubescheduler.config.k8s.io/v1",
                "profiles": [{"schedulerName": "bin-packing", "pluginConfig": {"a": 1}}]})


@pytest.mark.parametrize("name", ["cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "nvidia.com/gpu",
                                  "amd.com/gpu", "example.com/my_res.1"])
def test_resource_names_the_api_takes(name):
    assert s.resource_name_error(name) is None


@pytest.mark.parametrize("name,why", [
    ("gpu", "without a domain only"),
    ("CPU", "without a domain only"),
    ("nvidia.com/", "not a qualified name"),
    ("Nvidia.com/gpu", "not a DNS subdomain"),
    ("nvidia.com/gpu!", "not a qualified name"),
    ("kubernetes.io/gpu", "reserved"),
    ("", "not a resource name"),
])
def test_names_that_are_not_resources(name, why):
    assert why in s.resource_name_error(name)


def settings(**kw):
    args = dict(strategy="MostAllocated", resources=RES, fit_weight=1, balanced_weight=0, percentage=None,
                shape=SHAPE, profile="bin-packing")
    args.update(kw)
    return s.check_settings(**args)


def test_good_settings_have_no_problems():
    assert settings() == []
    assert settings(strategy="RequestedToCapacityRatio", percentage=0, balanced_weight=100, fit_weight="5") == []


@pytest.mark.parametrize("kw,message", [
    (dict(strategy="LeastWasted"), "strategy: 'LeastWasted' is not one of MostAllocated, RequestedToCapacityRatio"),
    (dict(resources=[{"name": "cpu", "weight": 0}]), "resources[0].weight: 0 for cpu is not in 1..100"),
    (dict(resources=[{"name": "cpu", "weight": 101}]), "resources[0].weight: 101"),
    (dict(resources=[{"name": "gpu", "weight": 1}]), "resources[0].name: 'gpu' is not a resource name"),
    (dict(resources=[{"name": "cpu"}, {"name": "cpu"}]), "resources[1].name: cpu is listed twice"),
    (dict(resources=[{"name": "cpu", "weigth": 1}]), "resources[0]: {'name': 'cpu', 'weigth': 1} is not"),
    (dict(resources=[]), "resources: give at least one"),
    (dict(resources=[{"name": "cpu", "weight": "heavy"}]), "resources[0].weight must be a whole number"),
    (dict(fit_weight=0), "fit_weight: 0 is not in 1..100"),
    (dict(balanced_weight=-1), "balanced_allocation_weight: -1 is not in 0..100 (0 disables the plugin)"),
    (dict(percentage=101), "percentage_of_nodes_to_score: 101 is not in 0..100"),
    (dict(profile="Bin_Packing"), "profile: 'Bin_Packing' is not a scheduler name"),
    (dict(strategy="RequestedToCapacityRatio", shape=[{"utilization": 50, "score": 11}]), "shape[0].score: 11"),
    (dict(strategy="RequestedToCapacityRatio", shape=[{"utilization": 50, "score": 1},
                                                      {"utilization": 50, "score": 2}]),
     "shape[1].utilization: 50 does not increase"),
    (dict(strategy="RequestedToCapacityRatio", shape=[]), "needs at least one"),
])
def test_bad_settings_name_the_setting(kw, message):
    assert any(message in p for p in settings(**kw)), settings(**kw)


def test_the_api_version_follows_the_schedulers_version():
    assert s.api_version_for((1, 36)) == "kubescheduler.config.k8s.io/v1"
    assert s.api_version_for((1, 25)) == "kubescheduler.config.k8s.io/v1"
    assert s.api_version_for((1, 24)) == "kubescheduler.config.k8s.io/v1beta3"
    assert s.api_version_for((1, 23)) == "kubescheduler.config.k8s.io/v1beta3"
    with pytest.raises(s.SchedulerConfigError, match="older than 1.23"):
        s.api_version_for((1, 22))
    with pytest.raises(s.SchedulerConfigError, match="version is unknown"):
        s.api_version_for(None)
    assert s.version_from_image("registry.k8s.io/kube-scheduler:v1.36.3") == (1, 36)
    assert s.version_from_image("my.registry:5000/kube-scheduler:v1.24.17-custom") == (1, 24)
    assert s.version_from_image("registry.k8s.io/kube-scheduler") is None
    assert s.parse_version("v1.30.2") == (1, 30) and s.parse_version("1.23") == (1, 23)
    assert s.parse_version("latest") is None


def test_the_host_path_behind_a_containers_path():
    vols = [dict(name="k", host_path="/etc/kubernetes/scheduler.conf", mount_path="/etc/kubernetes/scheduler.conf"),
            dict(name="cfg", host_path="/srv/sched", mount_path="/etc/sched"),
            dict(name="deep", host_path="/srv/deeper", mount_path="/etc/sched/profiles")]
    assert s.resolve_host_path("/etc/sched/config.yaml", vols) == "/srv/sched/config.yaml"
    assert s.resolve_host_path("/etc/sched/profiles/a.yaml", vols) == "/srv/deeper/a.yaml"
    assert s.resolve_host_path("/etc/schedx/a.yaml", vols) is None
    assert s.resolve_host_path("/etc/kubernetes/scheduler.conf", vols) == "/etc/kubernetes/scheduler.conf"


POD = """apiVersion: v1
kind: Pod
metadata:
  name: kube-scheduler
spec:
  containers:
  - name: kube-scheduler
    command: [kube-scheduler, --kubeconfig=/etc/kubernetes/scheduler.conf]
    volumeMounts:
    - {mountPath: /etc/kubernetes/scheduler.conf, name: kubeconfig, readOnly: true}
  volumes:
  - hostPath: {path: /etc/kubernetes/scheduler.conf, type: FileOrCreate}
    name: kubeconfig
"""


def test_a_mount_and_an_annotation_are_added_once():
    pod = yaml.safe_load(POD)
    ctr = sp.find_container(pod, "kube-scheduler")
    assert sp.set_mount(pod, ctr, "cfg", "/etc/k/c.yaml", "/etc/k/c.yaml")
    assert not sp.set_mount(pod, ctr, "cfg", "/etc/k/c.yaml", "/etc/k/c.yaml")
    assert pod["spec"]["volumes"][1] == {"hostPath": {"path": "/etc/k/c.yaml", "type": "File"}, "name": "cfg"}
    assert ctr["volumeMounts"][1] == {"mountPath": "/etc/k/c.yaml", "name": "cfg", "readOnly": True}
    assert sp.set_mount(pod, ctr, "cfg", "/etc/k/d.yaml", "/etc/k/d.yaml")
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["kubeconfig", "cfg"]
    with pytest.raises(sp.PodError, match="not a hostPath volume"):
        pod["spec"]["volumes"].append({"name": "empty", "emptyDir": {}})
        sp.set_mount(pod, ctr, "empty", "/x", "/x")
    assert sp.set_annotation(pod, "a/b", "1") and not sp.set_annotation(pod, "a/b", "1")
    assert pod["metadata"]["annotations"] == {"a/b": "1"}
    assert sp.set_annotation(pod, "a/b", None) and "annotations" not in pod["metadata"]


@pytest.mark.parametrize("api", ["v1beta3", "v1beta4"])
def test_kubeadm_extra_volumes_in_both_layouts(api):
    cfg = {"apiVersion": "kubeadm.k8s.io/" + api, "kind": "ClusterConfiguration",
           "scheduler": {"extraVolumes": [{"name": "other", "hostPath": "/a", "mountPath": "/a"}]}}
    assert k.set_extra_volume(cfg, "scheduler", "cfg", "/etc/k/c.yaml", "/etc/k/c.yaml")
    assert not k.set_extra_volume(cfg, "scheduler", "cfg", "/etc/k/c.yaml", "/etc/k/c.yaml")
    assert cfg["scheduler"]["extraVolumes"] == [
        {"name": "other", "hostPath": "/a", "mountPath": "/a"},
        {"name": "cfg", "hostPath": "/etc/k/c.yaml", "mountPath": "/etc/k/c.yaml", "readOnly": True,
         "pathType": "File"}]
    with pytest.raises(k.KubeadmError, match="not one of"):
        k.set_extra_volume(cfg, "etcd", "cfg", "/a", "/a")


def test_the_flags_the_scheduler_ignores_with_a_config_file_are_carried_into_it():
    flags = {"--kubeconfig": "/etc/kubernetes/scheduler.conf", "--leader-elect": "true", "--bind-address": "127.0.0.1",
             "--kube-api-qps": "100", "--leader-elect-lease-duration": "30s", "--profiling": None}
    cfg = merged()
    assert s.carry_flags(cfg, flags) == ["--kube-api-qps", "--kubeconfig", "--leader-elect",
                                         "--leader-elect-lease-duration", "--profiling"]
    assert cfg["clientConnection"] == {"kubeconfig": "/etc/kubernetes/scheduler.conf", "qps": 100.0}
    assert cfg["leaderElection"] == {"leaderElect": True, "leaseDuration": "30s"}
    assert cfg["enableProfiling"] is True and "bindAddress" not in cfg
    assert s.carry_flags(cfg, flags) == []  # carried once
    # the file wins over the flag
    user = yaml.safe_load(USER)
    assert s.carry_flags(user, {"--kubeconfig": "/other.conf", "--leader-elect": "false"}) == ["--leader-elect"]
    assert user["clientConnection"]["kubeconfig"] == "/etc/kubernetes/scheduler.conf"
    assert user["leaderElection"] == {"leaderElect": False}
    with pytest.raises(s.SchedulerConfigError, match="--kube-api-burst=lots is not a whole number"):
        s.carry_flags(merged(), {"--kube-api-burst": "lots"})


def test_the_system_default_spreading_is_turned_off_in_the_profile_and_back_on():
    off = merged(default_spreading=False)
    pc = profile(off, "bin-packing")["pluginConfig"]
    assert {"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": []}} in pc
    assert merged(copy.deepcopy(off), default_spreading=False) == off
    on = merged(copy.deepcopy(off), default_spreading=True)
    assert [c["name"] for c in profile(on, "bin-packing")["pluginConfig"]] == ["NodeResourcesFit"]
    # a user's own PodTopologySpread arguments: kept when on, the two keys set (others kept) when off
    user = merged(yaml.safe_load(USER), replace_default=True)
    assert {"name": "PodTopologySpread", "args": {"defaultingType": "List"}} in profile(user, "default-scheduler")[
        "pluginConfig"]
    user_off = merged(yaml.safe_load(USER), replace_default=True, default_spreading=False)
    assert {"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": []}} in profile(
        user_off, "default-scheduler")["pluginConfig"]
