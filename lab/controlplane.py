"""The lab's Kubernetes control plane on the kube_control_plane nodes, made by the real kubeadm (lab/kubeadm.py).

kube-apiserver, kube-controller-manager and kube-scheduler run as kubeadm's static pods under the stand-in kubelet,
their objects in the external etcd hosts' cluster, behind HAProxy on the lab's load balancer node (the
controlPlaneEndpoint). The controller reaches the API server with the first node's admin.conf (copied to
lab/.state/pki/k8s/admin.conf). kwok (a systemd unit on the first node) keeps LAB_KWOK_NODES fake Nodes Ready with the
capacity of the worker classes' VM sizes: the cluster's pods run there.

Nodes are made once: a node that has joined is left to the roles, which own the manifests and kubeadm's configuration
from then on. The binaries are links into the lab's build, so a rebuilt control plane is the next start's.
"""

import concurrent.futures
import functools
import ipaddress
import json
import os
import subprocess
import tempfile
import time

from . import kubeadm
from .common import PKI, PREFIX, REPO, LabError, docker, log, put_file, run
from .kubeadm import k8s_version  # noqa: F401 (the lab's and tests' name)

K8S_BUILD = os.path.join(REPO, "lab", "k8s", "build.sh")
K8S_PKI = os.path.join(PKI, "k8s")
ADMIN_CONF = os.path.join(K8S_PKI, "admin.conf")  # the controller's kubeconfig (tests, benchmarks)
MANIFESTS = ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]

# The worker classes' VM sizes, as kwok's Nodes report them (allocatable = capacity: no kubelet reserves).
NODE_SIZES = {
    "kube_node_cpu": ("cpu", "Standard_D15_v2", {"cpu": "20", "memory": "140Gi", "pods": "110"}),
    "kube_node_gpu": ("gpu", "Standard_NC24", {"cpu": "24", "memory": "224Gi", "pods": "110", "nvidia.com/gpu": "4"}),
}
# kwok renews each Node's Lease every quarter of this; 2,500 Nodes at 240 s are ~42 lease writes a second.
# kube-controller-manager's grace before it marks a node NotReady is set above the renew interval to match
# (kubeadm.NODE_MONITOR_GRACE, in the cluster's kubeadm configuration).
KWOK_LEASE_SECONDS = 240
NODE_INFO_FIELDS = ["machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "containerRuntimeVersion",
                    "kubeProxyVersion", "operatingSystem", "architecture", "kubeletVersion"]
# Each fake Node's own InternalIP, as its VM's NIC has one in the cluster's subnet (kwok gives a hostNetwork pod its
# node's): the CPU class from 10.240.0.0, the GPU class from 10.241.0.0 (65,534 a class).
NODE_SUBNETS = {"kube_node_cpu": "10.240.0.0", "kube_node_gpu": "10.241.0.0"}
KWOK_STAGES = ["node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-complete", "pod-delete"]


def kwok_counts():
    """LAB_KWOK_NODES (50) fake Nodes: one in five of the GPU class (Standard_NC24), the rest Standard_D15_v2."""
    raw = os.environ.get("LAB_KWOK_NODES", "50")
    if not raw.isdigit():
        raise LabError("LAB_KWOK_NODES must be a whole number, got %r" % raw)
    total = int(raw)
    gpu = total // 5
    return {"kube_node_cpu": total - gpu, "kube_node_gpu": gpu}


def kwok_address(group, index):
    """The InternalIP of the group's index-th fake Node."""
    if not 1 <= index < 65535:
        raise LabError("LAB_KWOK_NODES gives %s %d Nodes; its subnet has addresses for 65,534" % (group, index))
    return str(ipaddress.IPv4Address(NODE_SUBNETS[group]) + index)


def kwok_addresses(name, address):
    return [{"type": "InternalIP", "address": address}, {"type": "Hostname", "address": name}]


def kwok_node(group, index):
    short, size, resources = NODE_SIZES[group]
    name = "kwok-%s-%04d" % (short, index)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                       "type": "kwok", "node.kubernetes.io/instance-type": size, "kubescale.io/node-class": group},
        },
        # kwok reports its own version as the kubelet's unless told (kubeadm upgrade checks every kubelet's); the
        # fields left empty are kwok's to fill
        "status": {"capacity": dict(resources), "allocatable": dict(resources),
                   "addresses": kwok_addresses(name, kwok_address(group, index)),
                   "nodeInfo": dict(dict.fromkeys(NODE_INFO_FIELDS, ""), operatingSystem="linux", architecture="amd64",
                                    kubeletVersion=k8s_version())},
    }


def kwok_nodes(counts):
    return [kwok_node(group, i) for group, n in sorted(counts.items()) for i in range(1, n + 1)]


# --------------------------------------------------------------------------- build

@functools.lru_cache(maxsize=None)
def build_binaries():
    """The control plane's binaries from lab/k8s (cached outside the checkout); their directory, asked once per
    process (a failed build is asked again)."""
    proc = subprocess.run(["bash", K8S_BUILD], stdout=subprocess.PIPE, text=True, check=False)
    if proc.returncode != 0:
        raise LabError("building the lab's Kubernetes control plane failed (lab/k8s/build.sh said why above); "
                       "the lab does not start without it")
    return proc.stdout.strip().splitlines()[-1]


KWOK_UNIT = """[Unit]
Description=Lab: kwok keeps the fake Nodes (and their pods) of the lab's API server alive
After=kubelet.service

[Service]
ExecStart=/usr/local/bin/kwok --kubeconfig=/etc/kubernetes/kwok.conf --config=/etc/kwok/kwok.yaml \\
  --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \\
  --node-lease-duration-seconds={lease} --cidr=10.128.0.1/9
Restart=always
RestartSec=2

[Install]
WantedBy=multi-user.target
"""


def kwok_config(build_dir):
    """kwok's stage files (from the kwok module); its options are flags in the unit (a KwokConfiguration in this
    file would replace kwok's defaults whole)."""
    docs = []
    for stage in KWOK_STAGES:
        with open(os.path.join(build_dir, "stages", stage + ".yaml")) as f:
            docs.append(f.read().strip())
    return "\n---\n".join(docs) + "\n"


def ensure_control_plane(cps, workers, lb, etcd_members, etcd_client_files):
    """kubeadm's cluster (lab/kubeadm.py), the controller's admin.conf, kwok on the first control plane node and its
    fake Nodes; returns the binaries' directory."""
    if not cps:
        return None
    if not etcd_members:
        raise LabError("the lab's control plane stores its objects in the external etcd hosts' cluster: "
                       "LAB_ETCD_KUBEADM_NODES must be 1 or more")
    if not lb:
        raise LabError("the lab's control plane is reached through its load balancer: LAB_LB_NODES must be 1")
    build_dir = build_binaries()
    kubeadm.ensure_cluster(cps, workers, lb, etcd_members, etcd_client_files)
    first = PREFIX + cps[0]["name"]
    os.makedirs(K8S_PKI, exist_ok=True)
    admin = docker("exec", first, "cat", "/etc/kubernetes/admin.conf").stdout
    with open(ADMIN_CONF + ".tmp", "w") as f:
        f.write(admin)
    os.chmod(ADMIN_CONF + ".tmp", 0o600)
    os.replace(ADMIN_CONF + ".tmp", ADMIN_CONF)
    # kwok on the first node only (two would both renew every fake Node's Lease), through the load balancer
    put_file(first, "/etc/kwok/kwok.yaml", kwok_config(build_dir), "0644")
    put_file(first, "/etc/kubernetes/kwok.conf", admin)
    unit = KWOK_UNIT.format(lease=KWOK_LEASE_SECONDS)
    if docker("exec", first, "cat", "/etc/systemd/system/kwok.service", check=False).stdout != unit:
        put_file(first, "/etc/systemd/system/kwok.service", unit, "0644")
        docker("exec", first, "systemctl", "daemon-reload")
        docker("exec", first, "systemctl", "enable", "kwok.service")
        docker("exec", first, "systemctl", "restart", "kwok.service")
    docker("exec", first, "systemctl", "enable", "--now", "kwok.service")
    for cp in cps[1:]:
        docker("exec", PREFIX + cp["name"], "systemctl", "disable", "--now", "kwok.service", check=False)
    for cp in cps:
        wait_ready(cp)
    ensure_kwok_nodes(build_dir, kwok_counts())
    return build_dir


def kubectl(build_dir, *args, input_data=None, check=True):
    return run([os.path.join(build_dir, "bin", "kubectl"), "--kubeconfig", ADMIN_CONF] + list(args),
               input_data=input_data, check=check)


def wait_ready(cp, timeout=300):
    """Until kube-apiserver answers /readyz (through cp's admin.conf, from the node itself)."""
    deadline = time.time() + timeout
    while True:
        proc = docker("exec", PREFIX + cp["name"], "kubectl", "--kubeconfig=/etc/kubernetes/admin.conf",
                      "get", "--raw=/readyz", check=False)
        if proc.returncode == 0 and proc.stdout.strip() == "ok":
            return
        if time.time() > deadline:
            raise LabError("kube-apiserver on %s is not ready after %ds: %s%s"
                           % (cp["name"], timeout, proc.stdout.strip()[-500:], proc.stderr.strip()[-500:]))
        time.sleep(2)


def kwok_listing(text):
    """{name: (kubelet version, InternalIP)} from lines "name version address" (either may be missing: "")."""
    out = {}
    for line in text.splitlines():
        fields = line.split()
        if fields:
            out[fields[0]] = tuple((fields[1:] + ["", ""])[:2])
    return out


def ensure_kwok_nodes(build_dir, counts, timeout=600):
    """Create the fake Nodes that are missing (server-side apply), remove the kwok Nodes beyond the counts, and wait
    until every one is Ready."""
    want = kwok_nodes(counts)
    names = {n["metadata"]["name"] for n in want}
    listed = kubectl(build_dir, "get", "nodes", "-l", "type=kwok", "-o",
                     "jsonpath={range .items[*]}{.metadata.name} {.status.nodeInfo.kubeletVersion} "
                     "{.status.addresses[?(@.type==\"InternalIP\")].address}{\"\\n\"}{end}").stdout
    seen = kwok_listing(listed)
    have = set(seen)
    status = dict((n["metadata"]["name"], n["status"]) for n in want)
    # Nodes made before kwok was told the kubelet's version, or before each had its own address
    stale = sorted(n for n, (version, address) in seen.items()
                   if n in names and (version != k8s_version() or address != status[n]["addresses"][0]["address"]))
    if stale:
        def fix(chunk):
            for n in chunk:
                patch = {"status": {"nodeInfo": {"kubeletVersion": k8s_version()}, "addresses": status[n]["addresses"]}}
                kubectl(build_dir, "patch", "node", n, "--subresource=status", "--type=merge", "-p", json.dumps(patch))
        chunks = [stale[i::4] for i in range(4) if stale[i::4]]
        with concurrent.futures.ThreadPoolExecutor(len(chunks)) as pool:
            list(pool.map(fix, chunks))
        log("set the kubelet version and address of %d kwok Nodes" % len(stale))
    missing = [n for n in want if n["metadata"]["name"] not in have]
    if missing:
        with tempfile.TemporaryDirectory() as d:
            # a Node's status is kept on create (the Node strategy drops only disabled fields): capacity included
            path = os.path.join(d, "nodes.json")
            with open(path, "w") as f:
                json.dump({"apiVersion": "v1", "kind": "List", "items": missing}, f)
            kubectl(build_dir, "create", "-f", path)
        log("created %d kwok Nodes" % len(missing))
    extra = sorted(have - names)
    if extra:
        # kubectl deletes one object per request, in turn: four at once, so thousands go in minutes, not ten
        chunks = [extra[i::4] for i in range(4) if extra[i::4]]
        with concurrent.futures.ThreadPoolExecutor(len(chunks)) as pool:
            list(pool.map(lambda chunk: kubectl(build_dir, "delete", "node", "--wait=false", *chunk), chunks))
        log("removed %d kwok Nodes beyond LAB_KWOK_NODES" % len(extra))
    deadline = time.time() + timeout
    while True:
        out = kubectl(build_dir, "get", "nodes", "-l", "type=kwok", "-o",
                      "jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type==\"Ready\")].status}"
                      "{\"\\n\"}{end}").stdout
        ready = {line.split()[0] for line in out.splitlines() if line.endswith(" True")}
        if names <= ready:
            return
        if time.time() > deadline:
            raise LabError("%d of %d kwok Nodes not Ready after %ds (kwok.service on the control plane node)"
                           % (len(names - ready), len(names), timeout))
        time.sleep(2)
