"""Against the lab's real kube-apiservers (the lab's inventory sets inflight limits, 800/400): apiserver_load's
FlowSchema takes the node agents' requests (the API server's own APF response headers say which schema and level
served each request), new inflight limits restart each API server on the new flags once - the manifest, kubeadm's file
and kubeadm's record all carrying them - and then change nothing, the agents' snippets are written, and bad input
changes no object, no file and not kubeadm's record. Runs after `make site`."""

import hashlib
import json
import os
import re
import subprocess
import sys
import time

import json_report
import pytest
import yaml
from kube import kubectl
from labnode import node
from test_etcd import ENV, playbook, recap

from lab import controlplane

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")
ROLE = "tests/integration/apiserver_role.yml"
NAME = "kubescale-node-agents"
MANIFEST = "/etc/kubernetes/manifests/kube-apiserver.yaml"
KUBEADM = "/etc/kubernetes/kubeadm-config.yaml"

pytestmark = [pytest.mark.usefixtures("lab"),
              pytest.mark.usefixtures("control_plane_lock")]


def ready():
    proc = kubectl("get", "--raw=/readyz", check=False)
    return proc.returncode == 0 and proc.stdout.strip() == "ok"


def wait_ready(timeout=180):
    deadline = time.time() + timeout
    while not ready():
        assert time.time() < deadline, "kube-apiserver not ready after %ds" % timeout
        time.sleep(2)


def uid(kind):
    return kubectl("get", kind, NAME, "-o", "jsonpath={.metadata.uid}").stdout


def flowschema_of(user):
    """The FlowSchema UID the API server's APF filter classified `user`'s request into (its response header)."""
    proc = kubectl("-v=8", "--as=" + user, "get", "pods", "-n", "default", check=False)
    found = re.search(r"X-Kubernetes-Pf-Flowschema-Uid: (\S+)", proc.stderr)
    assert found, proc.stderr[-2000:]
    return found.group(1)


def objects():
    out = {}
    for kind in ("prioritylevelconfiguration", "flowschema"):
        obj = json.loads(kubectl("get", kind, NAME, "-o", "json").stdout)
        out[kind] = (obj["metadata"]["generation"], obj["spec"])
    return out


def record():
    """kubeadm's record: its resourceVersion and the apiServer.extraArgs of its ClusterConfiguration."""
    cm = json.loads(kubectl("get", "configmap", "-n", "kube-system", "kubeadm-config", "-o", "json").stdout)
    cfg = yaml.safe_load(cm["data"]["ClusterConfiguration"])
    return cm["metadata"]["resourceVersion"], dict((a["name"], a["value"]) for a in cfg["apiServer"]["extraArgs"])


def files():
    out = {p: hashlib.sha256(node("cp-1", "cat", p).stdout.encode()).hexdigest() for p in (MANIFEST, KUBEADM)}
    out["record"] = record()[0]
    return out


def apiserver_pid():
    return node("cp-1", "pgrep", "-x", "kube-apiserver", check=False).stdout.strip()


def run(*extra):
    return playbook("-i", HOSTS, ROLE, *extra)


@pytest.fixture(scope="module")
def converged():
    wait_ready()
    proc = run()
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_the_agents_requests_land_in_their_own_flowschema(converged):
    ours = uid("flowschema")
    level = json.loads(kubectl("get", "prioritylevelconfiguration", NAME, "-o", "json").stdout)["spec"]
    assert level["type"] == "Limited" and level["limited"]["nominalConcurrencyShares"] == 10
    assert level["limited"]["limitResponse"]["queuing"] == {"queues": 16, "handSize": 4, "queueLengthLimit": 50}
    for agent in ("system:serviceaccount:logging:fluentd", "system:serviceaccount:kube-system:fluentd",
                  "system:serviceaccount:datadog:datadog-agent"):
        assert flowschema_of(agent) == ours, agent
    # everyone else keeps the schemas they had
    assert flowschema_of("system:serviceaccount:default:default") != ours
    assert flowschema_of("system:serviceaccount:logging:other") != ours
    again = run()
    assert again.returncode == 0 and recap(again, "cp-1")["changed"] == 0, again.stdout[-3000:]


def test_inflight_limits_restart_each_apiserver_once(converged):
    limits = ["-e", "apiserver_load_max_requests_inflight=600", "-e", "apiserver_load_max_mutating_requests_inflight=300"]
    try:
        before, pid = files(), apiserver_pid()
        check = run("--check", "--diff", *limits)
        assert check.returncode == 0 and recap(check, "cp-1")["changed"] == 1, check.stdout[-3000:]
        assert "--max-requests-inflight=600" in check.stdout
        assert "ConfigMap kube-system/kubeadm-config (ClusterConfiguration)" in check.stdout  # its diff, too
        assert files() == before and apiserver_pid() == pid
        real = run(*limits)
        assert real.returncode == 0 and recap(real, "cp-1")["changed"] == 1, real.stdout[-3000:]
        # the call waited for the new API server's /readyz before it returned
        assert apiserver_pid() not in ("", pid) and ready()
        cmdline = node("cp-1", "sh", "-c", "tr '\\0' ' ' < /proc/$(pgrep -x kube-apiserver)/cmdline").stdout
        assert "--max-requests-inflight=600" in cmdline and "--max-mutating-requests-inflight=300" in cmdline
        docs = yaml.safe_load_all(node("cp-1", "cat", KUBEADM).stdout)
        cluster = [d for d in docs if d["kind"] == "ClusterConfiguration"][0]
        kubeadm = dict((a["name"], a["value"]) for a in cluster["apiServer"]["extraArgs"])
        assert kubeadm["max-requests-inflight"] == "600" and kubeadm["max-mutating-requests-inflight"] == "300"
        args = record()[1]
        assert args["max-requests-inflight"] == "600" and args["max-mutating-requests-inflight"] == "300"
        pid = apiserver_pid()
        again = run(*limits)
        assert again.returncode == 0 and recap(again, "cp-1")["changed"] == 0, again.stdout[-3000:]
        assert apiserver_pid() == pid
    finally:
        # back to the inventory's limits, the way they came: the role (the manifests, the file and the record)
        back = playbook("-i", HOSTS, ROLE)
        assert back.returncode == 0, back.stdout[-3000:]
        wait_ready()


def test_the_agents_snippets(converged, tmp_path):
    out = tmp_path / "agents"
    proc = run("-e", "apiserver_load_agent_snippets_dir=%s" % out, "-e", "apiserver_load_fluentd_cache_size=20000")
    assert proc.returncode == 0, proc.stdout[-3000:]
    fluentd = (out / "fluentd-kubernetes-metadata.conf").read_text()
    assert "@type kubernetes_metadata" in fluentd and "watch true" in fluentd and "cache_size 20000" in fluentd
    datadog = (out / "datadog-values.yaml").read_text()
    assert "clusterAgent:\n  enabled: true" in datadog and 'value: "300"' in datadog
    again = run("-e", "apiserver_load_agent_snippets_dir=%s" % out, "-e", "apiserver_load_fluentd_cache_size=20000")
    assert recap(again, "cp-1")["changed"] == 0


@pytest.mark.parametrize("extra,message", [
    ({"apiserver_load_matching_precedence": 9000}, "apiserver_load_matching_precedence: 9000 is not in 1..8999"),
    ({"apiserver_load_nominal_concurrency_shares": 0}, "apiserver_load_nominal_concurrency_shares: 0 is not a whole"),
    ({"apiserver_load_hand_size": 20}, "apiserver_load_hand_size: 20 is more than queues (16)"),
    ({"apiserver_load_agents": [{"name": "Fluentd", "namespace": "logging"}]},
     "apiserver_load_agents[0].name: 'Fluentd' is not a service account name"),
    ({"apiserver_load_max_requests_inflight": 0}, "apiserver_load_max_requests_inflight (0) and"),
    ({"apiserver_load_agent_snippets_dir": "agents"}, "apiserver_load_agent_snippets_dir (agents) must be empty or"),
    ({"apiserver_load_fluentd_cache_size": 0}, "apiserver_load_fluentd_cache_size (0) must be 1 or more"),
    ({"apiserver_load_queues": "many"}, "apiserver_load_queues"),
])
def test_bad_input_is_refused_and_changes_nothing(converged, extra, message):
    before, objs, pid = files(), objects(), apiserver_pid()
    proc = run("-e", json.dumps(extra))
    assert proc.returncode != 0
    assert message in proc.stdout.replace("\n        ", " "), proc.stdout[-3000:]
    assert "changed=0" in proc.stdout
    assert files() == before and objects() == objs and apiserver_pid() == pid


def level():
    return json.loads(kubectl("get", "prioritylevelconfiguration", NAME, "-o", "json").stdout)


def test_a_priority_level_changed_by_hand_is_predicted_and_put_back(converged):
    kubectl("patch", "prioritylevelconfiguration", NAME, "--type=merge", "-p",
            json.dumps({"spec": {"limited": {"nominalConcurrencyShares": 99}}}))
    objs = objects()
    check = run("--check", "--diff")
    assert check.returncode == 0 and recap(check, "cp-1")["changed"] == 1, check.stdout[-3000:]
    assert re.search(r"^-\s+nominalConcurrencyShares: 99$", check.stdout, re.M), check.stdout[-3000:]
    assert re.search(r"^\+\s+nominalConcurrencyShares: 10$", check.stdout, re.M), check.stdout[-3000:]
    assert objects() == objs
    real = run()
    assert real.returncode == 0 and recap(real, "cp-1")["changed"] == 1, real.stdout[-3000:]
    assert level()["spec"]["limited"]["nominalConcurrencyShares"] == 10
    again = run()
    assert again.returncode == 0 and recap(again, "cp-1")["changed"] == 0, again.stdout[-3000:]


def test_an_object_the_api_server_refuses_leaves_the_others_as_they_were(converged):
    # kube_objects on its own: a valid change of the priority level, then a FlowSchema the API server's own
    # validation refuses (matchingPrecedence above 10000). Both were sent as dry runs first, so neither is written.
    good = level()
    good = {"apiVersion": good["apiVersion"], "kind": good["kind"], "metadata": {"name": NAME},
            "spec": dict(good["spec"], limited=dict(good["spec"]["limited"], nominalConcurrencyShares=20))}
    bad = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": NAME},
           "spec": {"matchingPrecedence": 20000, "priorityLevelConfiguration": {"name": NAME}}}
    objs = objects()
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", "-e", "ansible_python_interpreter=%s" % sys.executable,
                           "-e", json.dumps({"kubeconfig": controlplane.ADMIN_CONF, "objects": [good, bad]}),
                           "tests/integration/kube_objects.yml"], cwd=REPO,
                          env=dict(ENV, ANSIBLE_STDOUT_CALLBACK="json"), capture_output=True, text=True, check=False)
    assert proc.returncode == 2, proc.stdout[-3000:]
    result = json_report.first(proc.stdout, "localhost")
    assert result["msg"].startswith("FlowSchema %s (dry run): HTTP 422 " % NAME), result["msg"]
    assert "matchingPrecedence" in result["msg"] and result["msg"].endswith("Nothing was sent."), result["msg"]
    assert objects() == objs
