"""examples/hostnetwork-throughput.yaml against the lab's real API server and scheduler, kwok running its pods: the
pods run on the host's network with ClusterFirstWithHostNet, one per node (the port each takes on its node)."""

import json
import os
import time

import pytest
import yaml
from kube import kubectl

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")
EXAMPLE = os.path.join(REPO, "examples", "hostnetwork-throughput.yaml")
NS = "kubescale-hostnet-test"

pytestmark = [pytest.mark.usefixtures("lab"),
              pytest.mark.usefixtures("control_plane_lock")]


def test_the_example_runs_on_the_hosts_network_one_pod_per_node():
    with open(EXAMPLE) as f:
        doc = yaml.safe_load(f)
    spec = doc["spec"]["template"]["spec"]
    assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    doc["metadata"]["namespace"] = NS
    doc["spec"]["replicas"] = 4
    kubectl("delete", "namespace", NS, "--ignore-not-found", "--wait=true")
    kubectl("create", "namespace", NS)
    try:
        kubectl("apply", "-f", "-", stdin=json.dumps(doc))
        deadline = time.time() + 180
        while True:
            pods = json.loads(kubectl("get", "pods", "-n", NS, "-l", "app=throughput", "-o", "json").stdout)["items"]
            running = [p for p in pods if p["status"].get("phase") == "Running"]
            if len(running) == 4:
                break
            assert time.time() < deadline, [p["status"] for p in pods]
            time.sleep(2)
        nodes = [p["spec"]["nodeName"] for p in running]
        assert all(n.startswith("kwok-") for n in nodes) and len(set(nodes)) == 4
        for p in running:
            assert p["spec"]["hostNetwork"] is True and p["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
            # the container's port is a port of the node: what makes the scheduler keep them apart
            assert p["spec"]["containers"][0]["ports"][0]["hostPort"] == 5201
    finally:
        kubectl("delete", "namespace", NS, "--wait=false")
