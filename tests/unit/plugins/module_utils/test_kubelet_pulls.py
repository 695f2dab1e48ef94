"""kubelet_pulls' decisions: the version, the rules, and where each layout puts the settings."""

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils.kube import kubelet_pulls as K
from ansible_collections.kubescale.tuning.plugins.module_utils.node.state import validate

PARAMS = dict(config_path="/var/lib/kubelet/config.yaml", serialize_image_pulls=False, max_parallel_image_pulls=None,
              image_pull_progress_deadline="30m", kubelet_version="", container_runtime="docker",
              env_file="/etc/default/kubelet", cri_dockerd_command="/usr/bin/cri-dockerd --container-runtime-endpoint fd://")


def params(**changes):
    return dict(PARAMS, **changes)


@pytest.mark.parametrize("output, want", [
    ("Kubernetes v1.29.4\n", "1.29.4"),
    ("Kubernetes v1.23.17-eks-1234\n", "1.23.17"),
    ("Kubernetes v1.30\n", "1.30"),
    ("", ""),
    ("bash: kubelet: command not found", ""),
])
def test_version_from_kubelet_output(output, want):
    assert K.version_from_output(output) == want


@pytest.mark.parametrize("runtime, version, want", [
    ("docker", "1.23.17", "legacy"),
    ("docker", "1.24.0", "cri-dockerd"),
    ("docker", "", "cri-dockerd"),           # no kubelet: the current layout
    ("containerd", "1.23.17", "containerd"),
    ("containerd", "1.31.2", "containerd"),
])
def test_layout_by_runtime_and_version(runtime, version, want):
    assert K.layout(runtime, version) == want


def test_cri_dockerd_layout_merges_the_config_and_writes_the_dropin_and_restarts_when_running():
    spec, where = K.node_state_spec(params(max_parallel_image_pulls=5), "1.29.4")
    assert where == "cri-dockerd"
    assert spec["merges"] == [dict(path="/var/lib/kubelet/config.yaml", format="yaml", settings={
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "serializeImagePulls": False, "maxParallelImagePulls": 5})]
    assert spec["dropins"][0]["units"] == ["cri-docker.service"]
    assert spec["dropins"][0]["content"].endswith(
        "[Service]\nExecStart=\nExecStart=/usr/bin/cri-dockerd --container-runtime-endpoint fd:// "
        "--image-pull-progress-deadline=30m\n")
    assert [u["name"] for u in spec["units"]] == ["kubelet.service", "cri-docker.service"]
    assert spec["units"][1]["restart_on"] == ["/etc/systemd/system/cri-docker.service.d/20-kubescale-pulls.conf"]
    assert spec["fact"]["data"]["deadline_in"] == "/etc/systemd/system/cri-docker.service.d/20-kubescale-pulls.conf"
    assert spec["directories"] == [dict(path="/var/lib/kubelet", mode="0700")]
    # node_state accepts it: the drop-in's directory is added, nothing is given twice
    normalised = validate(spec)
    assert "/etc/systemd/system/cri-docker.service.d" in [d["path"] for d in normalised["directories"]]


def test_legacy_layout_puts_the_deadline_in_kubelet_extra_args_and_no_dropin():
    spec, where = K.node_state_spec(params(), "1.23.17")
    assert where == "legacy"
    assert spec["merges"][1] == dict(path="/etc/default/kubelet", format="env", settings={
        "KUBELET_EXTRA_ARGS": {"--image-pull-progress-deadline": "30m"}})
    assert spec["dropins"] == []
    assert spec["fact"]["data"]["deadline_in"] == "/etc/default/kubelet KUBELET_EXTRA_ARGS"
    assert "maxParallelImagePulls" not in spec["merges"][0]["settings"]


def test_containerd_layout_only_merges_the_config_and_a_bake_restarts_nothing():
    spec, where = K.node_state_spec(params(container_runtime="containerd"), "1.31.2", service=False)
    assert where == "containerd" and len(spec["merges"]) == 1 and spec["dropins"] == [] and spec["units"] == []
    assert spec["fact"] == dict(name="kubescale_kubelet_pulls", data=dict(
        kubelet_version="1.31.2", config_path="/var/lib/kubelet/config.yaml", serialize_image_pulls=False,
        max_parallel_image_pulls=None, deadline="30m", deadline_in="containerd image_pull_progress_timeout",
        kubeadm_patch=None))


def test_kubeadms_patch_of_the_kubelet_configuration_carries_the_same_fields():
    spec, _where = K.node_state_spec(params(kubeadm_patches_dir="/etc/kubernetes/patches", max_parallel_image_pulls=4),
                                     "1.36.3")
    patch = [m for m in spec["merges"] if m["path"].startswith("/etc/kubernetes/patches/")]
    # kubeadm's file name: the target, a suffix of ours, the patch type
    assert [m["path"] for m in patch] == ["/etc/kubernetes/patches/kubeletconfiguration-kubescale+merge.yaml"]
    assert patch[0]["settings"] == {"serializeImagePulls": False, "maxParallelImagePulls": 4}  # no apiVersion/kind
    assert {"path": "/etc/kubernetes/patches", "mode": "0755"} in spec["directories"]
    assert spec["fact"]["data"]["kubeadm_patch"] == patch[0]["path"]
    # kubeadm's patch is not the kubelet's file: writing it restarts nothing
    assert all(patch[0]["path"] not in u["restart_on"] for u in spec["units"])


@pytest.mark.parametrize("changes, message", [
    (dict(max_parallel_image_pulls=0), "kubelet_pulls_max_parallel_image_pulls (0) must be unset or 1 or more"),
    (dict(max_parallel_image_pulls=5, serialize_image_pulls=True),
     "kubelet_pulls_max_parallel_image_pulls (5) above 1 needs kubelet_pulls_serialize_image_pulls false"),
    (dict(image_pull_progress_deadline="30 minutes"),
     "kubelet_pulls_image_pull_progress_deadline (30 minutes) must be a Go duration like 30m"),
    (dict(kubelet_version="latest"), "kubelet_pulls_kubelet_version (latest) must be empty or like 1.29.4"),
    (dict(config_path="/var/lib/kubelet/config.json"),
     "kubelet_pulls_config_path (/var/lib/kubelet/config.json) must be an absolute .yaml path"),
])
def test_a_value_the_kubelet_would_refuse_names_the_variable(changes, message):
    with pytest.raises(K.PullsError) as err:
        K.check(params(**changes), "kubelet_pulls_")
    assert str(err.value).startswith(message)


def test_one_parallel_pull_with_serialized_pulls_and_a_compound_duration_are_fine():
    K.check(params(max_parallel_image_pulls=1, serialize_image_pulls=True, image_pull_progress_deadline="1h30m"))


@pytest.mark.parametrize("version, fails", [("1.26.3", True), ("1.27.0", False), ("", False), ("1.30", False)])
def test_max_parallel_image_pulls_needs_kubelet_1_27(version, fails):
    if fails:
        with pytest.raises(K.PullsError) as err:
            K.check_version(params(max_parallel_image_pulls=4), version, "kubelet_pulls_")
        assert str(err.value).startswith("kubelet_pulls_max_parallel_image_pulls (4) needs kubelet 1.27 or later; "
                                         "this kubelet is 1.26.3")
    else:
        K.check_version(params(max_parallel_image_pulls=4), version, "kubelet_pulls_")
