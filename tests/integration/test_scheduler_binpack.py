"""Against the lab's real kube-schedulers (kubeadm's static pods under the stand-in kubelet, one per control plane node,
electing a leader): the scheduler_binpack role's profile is what the running scheduler uses and what kubeadm's file and
record carry, a change restarts cp-1's on the new file and a scheduler holds the lease again, bad input changes no file
and no process, and a config the scheduler itself refuses is put back. Runs after `make site` converged the lab (the
site playbook has applied the role once already)."""

import calendar
import hashlib
import json
import os
import time

import pytest
import yaml
from kube import kubectl, wait_for
from labnode import node
from test_etcd import playbook, recap

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")
ROLE = "tests/integration/scheduler_role.yml"
MANIFEST = "/etc/kubernetes/manifests/kube-scheduler.yaml"
CONFIG = "/etc/kubernetes/kube-scheduler-config.yaml"
KUBEADM = "/etc/kubernetes/kubeadm-config.yaml"
FILES = (MANIFEST, CONFIG, KUBEADM)
NS = "kubescale-binpack-test"

pytestmark = [pytest.mark.usefixtures("lab"),
              pytest.mark.usefixtures("control_plane_lock")]


def files():
    """The three files' digests (None when absent)."""
    out = {}
    for path in FILES:
        proc = node("cp-1", "cat", path, check=False)
        out[path] = hashlib.sha256(proc.stdout.encode()).hexdigest() if proc.returncode == 0 else None
    return out


def read(path):
    return yaml.safe_load(node("cp-1", "cat", path).stdout)


def scheduler_pids():
    return node("cp-1", "pgrep", "-x", "kube-scheduler", check=False).stdout.split()


def lease():
    out = kubectl("get", "lease", "-n", "kube-system", "kube-scheduler", "-o", "json", check=False).stdout
    return (json.loads(out) if out else {}).get("spec", {})


def holds_lease(not_holder=None):
    """The lease's holder once a scheduler of the control plane nodes other than `not_holder` holds it and has renewed
    it lately."""
    def check():
        spec = lease()
        holder = spec.get("holderIdentity", "")
        if not holder.startswith("cp-") or holder == not_holder:
            return None
        renewed = kubectl("get", "lease", "-n", "kube-system", "kube-scheduler",
                          "-o", "jsonpath={.spec.renewTime}").stdout
        age = time.time() - calendar.timegm(time.strptime(renewed[:19], "%Y-%m-%dT%H:%M:%S"))
        return holder if age < spec.get("leaseDurationSeconds", 15) else None
    return wait_for("kube-scheduler's lease held" + (" by a new process" if not_holder else ""), check, timeout=120)


def run(*extra):
    return playbook("-i", HOSTS, ROLE, *extra)


def scheduler_args(cfg):
    return dict((a["name"], a["value"]) for a in (cfg.get("scheduler") or {}).get("extraArgs") or [])


def kubeadm_file():
    return [d for d in yaml.safe_load_all(node("cp-1", "cat", KUBEADM).stdout) if d["kind"] == "ClusterConfiguration"][0]


def kubeadm_record():
    return yaml.safe_load(kubectl("get", "configmap", "-n", "kube-system", "kubeadm-config", "-o",
                                  "jsonpath={.data.ClusterConfiguration}").stdout)


def digest_env(cfg):
    return [e["value"] for e in (cfg.get("scheduler") or {}).get("extraEnvs") or []
            if e["name"] == "KUBESCALE_SCHEDULER_CONFIG_SHA256"]


def pod(name, scheduler):
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
        "spec": {"schedulerName": scheduler, "containers": [{
            "name": "work", "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}})


@pytest.fixture(scope="module")
def converged():
    """The role applied with its defaults (as the site playbook left it), and a namespace for test pods."""
    proc = run()
    assert proc.returncode == 0, proc.stdout[-3000:]
    holds_lease()
    kubectl("delete", "namespace", NS, "--ignore-not-found", "--wait=true")
    kubectl("create", "namespace", NS)
    # Pods are refused until kube-controller-manager has made the new namespace's default service account (CI once
    # applied the first pod in that instant: 'serviceaccount "default" not found').
    wait_for("the default service account in " + NS,
             lambda: kubectl("get", "serviceaccount", "default", "-n", NS, check=False).returncode == 0)
    yield
    kubectl("delete", "namespace", NS, "--ignore-not-found", "--wait=false", check=False)
    assert run().returncode == 0


def test_the_running_scheduler_has_the_profile_and_pods_choose_it(converged):
    manifest = read(MANIFEST)
    ctr = manifest["spec"]["containers"][0]
    assert "--config=" + CONFIG in ctr["command"]
    assert {"mountPath": CONFIG, "name": "kubescale-scheduler-config", "readOnly": True} in ctr["volumeMounts"]
    assert {"hostPath": {"path": CONFIG, "type": "File"}, "name": "kubescale-scheduler-config"} in \
        manifest["spec"]["volumes"]
    cfg = read(CONFIG)
    assert cfg["apiVersion"] == "kubescheduler.config.k8s.io/v1" and cfg["percentageOfNodesToScore"] == 100
    assert [p["schedulerName"] for p in cfg["profiles"]] == ["default-scheduler", "bin-packing"]
    fit = cfg["profiles"][1]["pluginConfig"][0]
    assert fit["args"]["scoringStrategy"]["type"] == "MostAllocated"
    # where kubeadm renders the scheduler from: the same --config, volume and digest (the environment variable that
    # restarts the scheduler when only the file changes; kubeadm renders it too)
    env = dict((e["name"], e["value"]) for e in ctr.get("env") or [])
    for kubeadm in (kubeadm_file(), kubeadm_record()):
        assert scheduler_args(kubeadm)["config"] == CONFIG
        assert kubeadm["scheduler"]["extraVolumes"][0]["hostPath"] == CONFIG
        assert digest_env(kubeadm) == [env["KUBESCALE_SCHEDULER_CONFIG_SHA256"]]
    # the running process reads that file: a pod asking for the profile is bound, one asking for an unknown one is not
    cmdline = node("cp-1", "sh", "-c", "tr '\\0' ' ' < /proc/$(pgrep -x kube-scheduler)/cmdline").stdout
    assert "--config=" + CONFIG in cmdline
    kubectl("apply", "-f", "-", stdin=pod("packed", "bin-packing"))
    kubectl("apply", "-f", "-", stdin=pod("nobody", "no-such-scheduler"))
    bound = wait_for("the bin-packing pod bound", lambda: kubectl(
        "get", "pod", "-n", NS, "packed", "-o", "jsonpath={.spec.nodeName}").stdout, timeout=60)
    assert bound.startswith("kwok-")
    assert kubectl("get", "pod", "-n", NS, "nobody", "-o", "jsonpath={.spec.nodeName}").stdout == ""


def test_a_new_weight_is_predicted_then_restarts_the_scheduler_which_holds_its_lease(converged):
    new = ["-e", json.dumps({"scheduler_binpack_resources": [{"name": "cpu", "weight": 1},
                                                             {"name": "memory", "weight": 1},
                                                             {"name": "nvidia.com/gpu", "weight": 5}]})]
    before, pids, holder = files(), scheduler_pids(), holds_lease()
    wiring = (scheduler_args(kubeadm_file()), kubeadm_file()["scheduler"]["extraVolumes"])
    version = kubectl("get", "configmap", "-n", "kube-system", "kubeadm-config", "-o",
                      "jsonpath={.metadata.resourceVersion}").stdout
    check = run("--check", "--diff", *new)
    assert check.returncode == 0 and recap(check, "cp-1")["changed"] == 1, check.stdout[-3000:]
    assert "weight: 5" in check.stdout and "KUBESCALE_SCHEDULER_CONFIG_SHA256" in check.stdout
    assert files() == before and scheduler_pids() == pids
    assert kubectl("get", "configmap", "-n", "kube-system", "kubeadm-config", "-o",
                   "jsonpath={.metadata.resourceVersion}").stdout == version
    real = run(*new)
    assert real.returncode == 0 and recap(real, "cp-1")["changed"] == 1, real.stdout[-3000:]
    after = files()
    assert after[CONFIG] != before[CONFIG] and after[MANIFEST] != before[MANIFEST]
    # the wiring was there already: only the file and its digest changed, in the manifest and where kubeadm reads it
    assert (scheduler_args(kubeadm_file()), kubeadm_file()["scheduler"]["extraVolumes"]) == wiring
    env = dict((e["name"], e["value"]) for e in read(MANIFEST)["spec"]["containers"][0]["env"])
    assert digest_env(kubeadm_file()) == digest_env(kubeadm_record()) == [env["KUBESCALE_SCHEDULER_CONFIG_SHA256"]]
    assert scheduler_pids() != pids
    holds_lease(not_holder=holder if holder.startswith("cp-1_") else None)
    weights = read(CONFIG)["profiles"][1]["pluginConfig"][0]["args"]["scoringStrategy"]["resources"]
    assert {"name": "nvidia.com/gpu", "weight": 5} in weights
    again = run(*new)
    assert again.returncode == 0 and recap(again, "cp-1")["changed"] == 0, again.stdout[-3000:]


@pytest.mark.parametrize("extra,message", [
    ({"scheduler_binpack_strategy": "LeastWasted"}, "scheduler_binpack_strategy"),
    ({"scheduler_binpack_resources": [{"name": "cpu", "weight": 0}]},
     "scheduler_binpack_resources[0].weight: 0 for cpu is not in 1..100"),
    ({"scheduler_binpack_resources": [{"name": "gpu", "weight": 1}]},
     "scheduler_binpack_resources[0].name: 'gpu' is not a resource name"),
    ({"scheduler_binpack_percentage_of_nodes_to_score": 150},
     "scheduler_binpack_percentage_of_nodes_to_score: 150 is not in 0..100"),
    ({"scheduler_binpack_profile": "Bin_Packing"}, "scheduler_binpack_profile: 'Bin_Packing' is not a scheduler name"),
    ({"scheduler_binpack_strategy": "RequestedToCapacityRatio",
      "scheduler_binpack_shape": [{"utilization": 80, "score": 10}, {"utilization": 20, "score": 0}]},
     "scheduler_binpack_shape[1].utilization: 20 does not increase"),
    ({"scheduler_binpack_fit_weight": 0}, "scheduler_binpack_fit_weight: 0 is not in 1..100"),
    ({"scheduler_binpack_manifest": "/etc/kubernetes/manifests/nope.yaml", "scheduler_binpack_kubeadm_config": ""},
     "scheduler_binpack_manifest: neither /etc/kubernetes/manifests/nope.yaml"),
])
def test_bad_input_is_refused_and_changes_nothing(converged, extra, message):
    before, pids, holder = files(), scheduler_pids(), lease().get("holderIdentity")
    proc = run("-e", json.dumps(extra))
    assert proc.returncode != 0
    assert message in proc.stdout, proc.stdout[-3000:]
    assert "changed=0" in proc.stdout
    assert files() == before and scheduler_pids() == pids and lease().get("holderIdentity") == holder


def test_a_config_the_scheduler_refuses_is_put_back_and_the_old_scheduler_runs_again(converged):
    """The scheduler's own validation refuses what the role cannot know about: a user's file with parallelism -5.
    The module waits for the new scheduler, sees none, and puts the manifest, kubeadm's file and the config back."""
    user = "/etc/kubernetes/user-scheduler.yaml"
    node("cp-1", "sh", "-c", "cat > %s" % user, stdin=yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "parallelism": -5,
        "clientConnection": {"kubeconfig": "/etc/kubernetes/scheduler.conf"}}))
    # the manifest as kubeadm wrote it (no --config): the user's file is what the role would wire
    node("cp-1", "sh", "-c", "cp %s /root/scheduler-manifest.saved && cp %s /root/kubeadm.saved" % (MANIFEST, KUBEADM))
    manifest = read(MANIFEST)
    ctr = manifest["spec"]["containers"][0]
    ctr["command"] = [a for a in ctr["command"] if not a.startswith("--config=")]
    ctr["volumeMounts"] = [m for m in ctr["volumeMounts"] if m["name"] != "kubescale-scheduler-config"]
    manifest["spec"]["volumes"] = [v for v in manifest["spec"]["volumes"] if v["name"] != "kubescale-scheduler-config"]
    manifest["metadata"].pop("annotations", None)
    ctr.pop("env", None)
    node("cp-1", "sh", "-c", "cat > %s.tmp && mv %s.tmp %s" % (MANIFEST, MANIFEST, MANIFEST),
         stdin=yaml.safe_dump(manifest))
    try:
        holder = holds_lease()
        wait_for("the scheduler without --config", lambda: "--config" not in node(
            "cp-1", "sh", "-c", "tr '\\0' ' ' < /proc/$(pgrep -x kube-scheduler)/cmdline", check=False).stdout)
        before = {p: node("cp-1", "cat", p).stdout for p in (MANIFEST, KUBEADM, user)}
        proc = run("-e", json.dumps({"scheduler_binpack_config_path": user, "scheduler_binpack_wait_timeout": 30,
                                     "scheduler_binpack_kubeadm_config": KUBEADM}))
        assert proc.returncode != 0
        assert "kube-scheduler did not come back on %s within 30s" % user in proc.stdout, proc.stdout[-3000:]
        assert {p: node("cp-1", "cat", p).stdout for p in before} == before
        holds_lease(not_holder=holder if holder.startswith("cp-1_") else None)
        cmdline = node("cp-1", "sh", "-c", "tr '\\0' ' ' < /proc/$(pgrep -x kube-scheduler)/cmdline").stdout
        assert "--config" not in cmdline
    finally:
        node("cp-1", "sh", "-c", "rm -f %s; cp /root/kubeadm.saved %s; cp /root/scheduler-manifest.saved %s.tmp && "
                                 "mv %s.tmp %s" % (user, KUBEADM, MANIFEST, MANIFEST, MANIFEST))
