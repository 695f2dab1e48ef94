"""Against the lab's real API server, scheduler and controller-manager, with kwok Nodes: the cluster DNS Deployment
(kube-system/coredns, as kubeadm makes it, without anti-affinity) packed by the bin-packing profile puts several
replicas on one node; dns_spread gives each replica a node of its own, and with fewer nodes than replicas its
preferred rule leaves none Pending. Bad input changes no API object. Runs after `make site` (scheduler_binpack's
bin-packing profile in place)."""

import json
import os
import subprocess
import sys

import json_report
import pytest
import yaml
from kube import kubectl, wait_for
from test_etcd import ENV, playbook, recap

from lab import controlplane

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")
ROLE = "tests/integration/dns_role.yml"
MODULE = "tests/integration/dns_module.yml"
NS, NAME = "kube-system", "coredns"
TEST_LABEL = "kubescale.io/dns-test"

pytestmark = [pytest.mark.usefixtures("lab"),
              pytest.mark.usefixtures("control_plane_lock")]


def deployment():
    return json.loads(kubectl("get", "deployment", "-n", NS, NAME, "-o", "json").stdout)


def objects():
    """What a refused run must leave as it was: the Deployment's and the budget's generation and spec (their status
    moves on its own: the controllers write it)."""
    dep = deployment()
    pdb = json.loads(kubectl("get", "pdb", "-n", NS, NAME, "-o", "json", check=False).stdout or "{}")
    return (dep["metadata"]["generation"], dep["spec"], pdb.get("metadata", {}).get("generation"), pdb.get("spec"))


def placed(replicas):
    """{node: pods} of the Deployment's current ReplicaSet once `replicas` of its pods are Running and no old pod is
    left (the rollout done)."""
    def check():
        dep = deployment()
        status = dep.get("status", {})
        if dep["metadata"].get("generation") != status.get("observedGeneration"):
            return None
        if status.get("updatedReplicas") != replicas or status.get("readyReplicas") != replicas or \
                status.get("replicas") != replicas:
            return None
        pods = json.loads(kubectl("get", "pods", "-n", NS, "-l", "k8s-app=kube-dns", "-o", "json").stdout)["items"]
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        if len(live) != replicas or any(p["status"].get("phase") != "Running" for p in live):
            return None
        out = {}
        for p in live:
            out[p["spec"]["nodeName"]] = out.get(p["spec"]["nodeName"], 0) + 1
        return out
    return wait_for("%d DNS replicas rolled out" % replicas, check, timeout=240, interval=2)


def reset(replicas, node_selector=None):
    """The Deployment as a packed cluster without dns_spread has it: no anti-affinity, the bin-packing profile.

    Scaled to 0 first: pods left from a required rule keep new pods off their nodes (the scheduler honours an
    existing pod's anti-affinity too), which slows a rollout onto few nodes to a crawl."""
    kubectl("scale", "deployment", "-n", NS, NAME, "--replicas=0")

    def no_pod_left():
        return not kubectl("get", "pods", "-n", NS, "-l", "k8s-app=kube-dns", "-o", "name").stdout.strip()
    wait_for("no DNS pod left", no_pod_left, timeout=240, interval=2)
    patch = [{"op": "replace", "path": "/spec/replicas", "value": replicas},
             {"op": "add", "path": "/spec/template/spec/schedulerName", "value": "bin-packing"},
             {"op": "replace", "path": "/spec/template/spec/nodeSelector",
              "value": dict({"kubernetes.io/os": "linux"}, **(node_selector or {}))}]
    if deployment()["spec"]["template"]["spec"].get("affinity"):
        patch.append({"op": "remove", "path": "/spec/template/spec/affinity"})
    kubectl("patch", "deployment", "-n", NS, NAME, "--type=json", "-p", json.dumps(patch))


def run(*extra):
    return playbook("-i", HOSTS, ROLE, *extra)


@pytest.fixture(scope="module")
def dns():
    yield
    kubectl("label", "nodes", "-l", TEST_LABEL, TEST_LABEL + "-", check=False)
    patch = [{"op": "replace", "path": "/spec/replicas", "value": 2},
             {"op": "replace", "path": "/spec/template/spec/nodeSelector", "value": {"kubernetes.io/os": "linux"}},
             {"op": "replace", "path": "/spec/template/spec/schedulerName", "value": "default-scheduler"}]
    kubectl("patch", "deployment", "-n", NS, NAME, "--type=json", "-p", json.dumps(patch))
    assert run().returncode == 0
    placed(2)


def test_packed_replicas_share_nodes_and_the_role_gives_each_its_own(dns, capsys):
    reset(10)
    before = placed(10)
    shared = max(before.values())
    with capsys.disabled():
        print("\n10 DNS replicas, bin-packing, no anti-affinity: %d nodes, up to %d replicas on one" % (
            len(before), shared))
    # MostAllocated packs them: replicas share nodes (the risk dns_spread removes). Which node the first ones take is
    # the scheduler's random tie-break among equally scored nodes (a DNS pod's request moves a big node's score by
    # less than one point), so it is most often all ten on one node, sometimes nine and one.
    assert shared >= 2 and len(before) < 10, before
    rv = objects()
    check = run("--check", "--diff")
    assert check.returncode == 0 and recap(check, "cp-1")["changed"] == 1, check.stdout[-3000:]
    assert "requiredDuringSchedulingIgnoredDuringExecution" in check.stdout
    assert objects() == rv
    real = run()
    assert real.returncode == 0 and recap(real, "cp-1")["changed"] == 1, real.stdout[-3000:]
    assert "10 replicas, 50 nodes they may run on: required" in real.stdout.replace("\n        ", " ")
    after = placed(10)
    assert len(after) == 10 and set(after.values()) == {1}, after
    term = deployment()["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]
    assert term == [{"labelSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                     "topologyKey": "kubernetes.io/hostname"}]
    pdb = json.loads(kubectl("get", "pdb", "-n", NS, NAME, "-o", "json").stdout)["spec"]
    assert pdb == {"maxUnavailable": 1, "selector": {"matchLabels": {"k8s-app": "kube-dns"}}}
    again = run()
    assert again.returncode == 0 and recap(again, "cp-1")["changed"] == 0, again.stdout[-3000:]


def test_fewer_nodes_than_replicas_gets_the_preferred_rule_and_nothing_pending(dns, tmp_path):
    nodes = sorted(kubectl("get", "nodes", "-l", "type=kwok", "-o", "name").stdout.split())[:3]
    kubectl("label", "--overwrite", *nodes, TEST_LABEL + "=yes")
    reset(10, {TEST_LABEL: "yes"})
    patch_file = tmp_path / "coredns-spread.yaml"
    real = run("-e", "dns_spread_patch_file=%s" % patch_file)
    assert real.returncode == 0, real.stdout[-3000:]
    assert "10 replicas, 3 nodes they may run on: preferred" in real.stdout.replace("\n        ", " ")
    after = placed(10)
    # all ten run, on the three nodes they may use, spread as far as the scheduler's other scores let the preference
    assert set(after) <= {n.split("/", 1)[1] for n in nodes} and len(after) >= 2 and sum(after.values()) == 10
    pending = kubectl("get", "pods", "-n", NS, "-l", "k8s-app=kube-dns", "--field-selector=status.phase=Pending",
                      "-o", "name").stdout.split()
    assert pending == []
    anti = deployment()["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in anti
    assert anti["preferredDuringSchedulingIgnoredDuringExecution"] == [{"weight": 100, "podAffinityTerm": {
        "labelSelector": {"matchLabels": {"k8s-app": "kube-dns"}}, "topologyKey": "kubernetes.io/hostname"}}]
    # the GitOps patch is the same change, as a Deployment document
    doc = yaml.safe_load(patch_file.read_text())
    assert doc["kind"] == "Deployment" and doc["metadata"] == {"name": NAME, "namespace": NS}
    assert doc["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"] == anti["preferredDuringSchedulingIgnoredDuringExecution"]


@pytest.mark.parametrize("extra,message", [
    ({"dns_spread_mode": "always"}, "dns_spread_mode"),
    ({"dns_spread_preferred_weight": 0}, "dns_spread_preferred_weight (0) must be in 1..100"),
    ({"dns_spread_pdb_max_unavailable": 0}, "dns_spread_pdb_max_unavailable (0) must be a count of 1 or more"),
    ({"dns_spread_patch_file": "relative.yaml"}, "dns_spread_patch_file (relative.yaml) must be empty or an absolute"),
    ({"dns_spread_topology_max_skew": 0}, "dns_spread_topology_max_skew (0) must be 1 or more"),
    ({"dns_spread_deployment": "CoreDNS"}, "dns_spread_deployment (CoreDNS) and dns_spread_namespace"),
    ({"dns_spread_deployment": "kube-dns"}, "dns_spread_deployment: no Deployment kube-system/kube-dns"),
])
def test_bad_input_is_refused_and_changes_no_object(dns, extra, message):
    rv = objects()
    proc = run("-e", json.dumps(extra))
    assert proc.returncode != 0
    assert message in proc.stdout.replace("\n        ", " "), proc.stdout[-3000:]
    assert "changed=0" in proc.stdout
    assert objects() == rv


def module(*flags, **extra):
    """kubescale.tuning.dns_spread called on its own, from the controller as the role calls it: (rc, its result)."""
    extra.setdefault("kubeconfig", controlplane.ADMIN_CONF)
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "-e", "ansible_python_interpreter=%s" % sys.executable,
                           "-e", json.dumps(extra), MODULE] + list(flags), cwd=REPO,
                          env=dict(ENV, ANSIBLE_STDOUT_CALLBACK="json"), capture_output=True, text=True, check=False)
    result = json_report.first(proc.stdout, "localhost")
    return proc.returncode, result


def test_the_nodes_are_read_page_by_page_and_only_their_count_comes_back(dns):
    total = len(kubectl("get", "nodes", "-o", "name").stdout.split())
    rc, one = module("--check", page_size=500)
    rc7, paged = module("--check", page_size=7)
    assert rc == rc7 == 0, (one, paged)
    assert one["nodes"] == paged["nodes"] == total and total > 7
    assert one["plan"] == paged["plan"]
    assert "items" not in json.dumps(paged)  # no Node object in the result


def test_a_budget_changed_by_hand_is_predicted_and_put_back(dns):
    assert run().returncode == 0
    kubectl("patch", "pdb", "-n", NS, NAME, "--type=merge", "-p",
            json.dumps({"spec": {"maxUnavailable": None, "minAvailable": 1,
                                 "selector": {"matchLabels": {"k8s-app": "kube-dns", TEST_LABEL: "yes"}}}}))
    before = objects()
    rc, check = module("--check", "--diff")
    assert rc == 0 and check["changed"] and check["pdb_changed"] and not check["deployment_changed"], check
    assert check["diff"] == [{
        "before": {"spec": {"minAvailable": 1,
                            "selector": {"matchLabels": {"k8s-app": "kube-dns", TEST_LABEL: "yes"}}}},
        "after": {"spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"k8s-app": "kube-dns"}}}},
        "before_header": "PodDisruptionBudget %s/%s" % (NS, NAME),
        "after_header": "PodDisruptionBudget %s/%s" % (NS, NAME)}]
    assert objects() == before
    real = run()
    assert real.returncode == 0 and recap(real, "cp-1")["changed"] == 1, real.stdout[-3000:]
    pdb = json.loads(kubectl("get", "pdb", "-n", NS, NAME, "-o", "json").stdout)["spec"]
    assert pdb == {"maxUnavailable": 1, "selector": {"matchLabels": {"k8s-app": "kube-dns"}}}
    again = run()
    assert again.returncode == 0 and recap(again, "cp-1")["changed"] == 0, again.stdout[-3000:]


def test_a_missing_budget_is_created_in_a_real_run_only(dns):
    kubectl("delete", "pdb", "-n", NS, NAME)
    rc, check = module("--check")
    assert rc == 0 and check["pdb_changed"], check
    assert kubectl("get", "pdb", "-n", NS, NAME, check=False).returncode != 0
    rc, real = module()
    assert rc == 0 and real["pdb_changed"] and real["changed"], real
    assert json.loads(kubectl("get", "pdb", "-n", NS, NAME, "-o", "json").stdout)["spec"]["maxUnavailable"] == 1
    rc, again = module()
    assert rc == 0 and not again["changed"], again
