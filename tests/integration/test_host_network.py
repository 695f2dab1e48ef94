"""examples/hostnetwork-throughput.yaml against the lab's real API server and scheduler, kwok running its pods: the
pods run on the host's network with ClusterFirstWithHostNet, one per node (the port each takes on its node)."""

import json
import os

import pytest
import yaml
from kube import kubectl, wait_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")
EXAMPLE = os.path.join(REPO, "examples", "hostnetwork-throughput.yaml")
NS = "kubescale-hostnet-test"

pytestmark = [pytest.mark.usefixtures("lab"),
              pytest.mark.usefixtures("control_plane_lock")]


LABEL = "kubescale.io/hostnet-test"


def test_the_example_runs_on_the_hosts_network_one_pod_per_node():
    """What the cluster made of the example, not what the test sent: each running pod's address is its node's own
    (kwok gives a hostNetwork pod its node's IP, as the kubelet does), and with one replica more than the nodes it may
    use, the scheduler leaves that one Pending for want of the node's port (its NodePorts filter)."""
    with open(EXAMPLE) as f:
        doc = yaml.safe_load(f)
    spec = doc["spec"]["template"]["spec"]
    assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    listed = kubectl("get", "nodes", "-l", "type=kwok,kubescale.io/node-class=kube_node_cpu", "-o", "json").stdout
    nodes = json.loads(listed)["items"][:3]
    assert len(nodes) == 3
    names = sorted(n["metadata"]["name"] for n in nodes)
    address = dict((n["metadata"]["name"], [a["address"] for a in n["status"]["addresses"]
                                            if a["type"] == "InternalIP"][0]) for n in nodes)
    doc["metadata"]["namespace"] = NS
    doc["spec"]["replicas"] = 4
    spec["nodeSelector"] = {LABEL: "yes"}
    kubectl("delete", "namespace", NS, "--ignore-not-found", "--wait=true")
    kubectl("create", "namespace", NS)
    kubectl("label", "nodes", *names, LABEL + "=yes", "--overwrite")
    try:
        kubectl("apply", "-f", "-", stdin=json.dumps(doc))

        def settled():
            pods = json.loads(kubectl("get", "pods", "-n", NS, "-l", "app=throughput", "-o", "json").stdout)["items"]
            running = [p for p in pods if p["status"].get("phase") == "Running" and p["status"].get("podIP")]
            pending = [p for p in pods if p["status"].get("phase") == "Pending"
                       and any(c["type"] == "PodScheduled" and c["status"] == "False"
                               for c in p["status"].get("conditions", []))]
            return (running, pending) if len(running) == 3 and len(pending) == 1 else None
        running, pending = wait_for("3 throughput pods running and the 4th unschedulable", settled, timeout=180,
                                    interval=2)
        assert sorted(p["spec"]["nodeName"] for p in running) == names  # one per node
        for p in running:
            assert p["status"]["podIP"] == p["status"]["hostIP"] == address[p["spec"]["nodeName"]], p["status"]
        why = [c for c in pending[0]["status"]["conditions"] if c["type"] == "PodScheduled"][0]
        assert why["reason"] == "Unschedulable" and "free ports" in why["message"], why
    finally:
        kubectl("delete", "namespace", NS, "--wait=false")
        kubectl("label", "nodes", *names, LABEL + "-", check=False)
