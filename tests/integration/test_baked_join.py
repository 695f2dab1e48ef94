"""The autoscaler's path: a worker booted from the baked node image (`make bake`) joins the lab's cluster with `kubeadm
join` and no playbook run, and comes up tuned.

The node boots from kubescale-lab-baked:latest on the lab network with a blank emulated resource disk, as a VM an
autoscaler adds boots from its image; it joins with a fresh bootstrap token and kubeadm's patches directory, as a
node template's join command does. Then: it is a Ready Node; its kubelet's configuration, written by kubeadm join from
the cluster's kubelet-config and the image's patch, pulls in parallel; the ARP sysctls are persisted; Docker runs
overlay2 on the local SSD; the preloaded images were loaded at boot; and the audit finds the node green. Runs after
`make bake`, against the converged lab.
"""

import json
import os
import socket
import subprocess
import tempfile
import time

import pytest
import yaml
from audit_lab import ENV
from kube import kubectl, wait_for
from labnode import HOSTS, REPO, node

from lab import kubeadm
from lab.image import PAUSE_IMAGE

pytestmark = pytest.mark.usefixtures("lab")
IMAGE = "kubescale-lab-baked:latest"
CONTAINER = "kubescale-baked-join"
NAME = "baked-1"
SSH_KEY = os.path.join(REPO, "lab", ".state", "id_ed25519")


def sh(*argv, check=True):
    proc = subprocess.run(list(argv), capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise AssertionError("%s: %s" % (" ".join(argv), proc.stderr.strip()[-2000:]))
    return proc


def baked(*argv, check=True):
    return sh("docker", "exec", CONTAINER, *argv, check=check)


def inventory():
    with open(HOSTS) as f:
        return yaml.safe_load(f)["all"]["children"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def joined():
    assert sh("docker", "image", "inspect", IMAGE, check=False).returncode == 0, "make bake builds %s" % IMAGE
    cp1 = sorted(inventory()["kube_control_plane"]["hosts"])[0]
    first_ip = inventory()["kube_control_plane"]["hosts"][cp1]["lab_ip"]
    ip = first_ip.rsplit(".", 1)[0] + ".249"  # the last address of the CPU class's range: no lab node of its own
    disk = tempfile.NamedTemporaryFile(prefix="kubescale-baked-join-", suffix=".img", dir="/var/tmp", delete=False)
    disk.close()
    sh("truncate", "-s", "1G", disk.name)
    loop = sh("losetup", "--find", "--show", disk.name).stdout.strip()
    port = free_port()
    sh("docker", "rm", "-f", "-v", CONTAINER, check=False)
    try:
        sh("docker", "run", "-d", "--name", CONTAINER, "--hostname", NAME, "--network", "kubescale-lab", "--ip", ip,
           "--stop-signal", "SIGRTMIN+3", "--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN", "--cgroupns=host",
           "--security-opt", "apparmor=unconfined", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "--tmpfs", "/run",
           "--tmpfs", "/run/lock", "-v", "%s.pub:/root/.ssh/authorized_keys:ro" % SSH_KEY,
           "-p", "127.0.0.1:%d:22" % port, "--device", "%s:/dev/sdb" % loop,
           "-v", "/var/cache/kubescale/k8s:/opt/kubescale-k8s:ro", "-v", "/var/lib/docker", IMAGE)

        def booted():
            state = baked("systemctl", "is-system-running", "--wait", check=False).stdout.strip()
            return state in ("running", "degraded")
        wait_for("the baked node to boot", booted, timeout=180)
        # what an autoscaler's node template runs: a fresh token's join, with kubeadm's patches directory
        words = node(cp1, "kubeadm", "token", "create", "--ttl", "1h", "--print-join-command").stdout.split()
        cfg = {"apiVersion": kubeadm.V1BETA4, "kind": "JoinConfiguration",
               "discovery": {"bootstrapToken": {"apiServerEndpoint": words[2], "token": words[4],
                                                "caCertHashes": [words[6]]}},
               "nodeRegistration": kubeadm.node_registration({"name": NAME, "ip": ip}, control_plane=False),
               "patches": {"directory": kubeadm.PATCHES}}
        subprocess.run(["docker", "exec", "-i", CONTAINER, "sh", "-c", "cat > /root/join.yaml"],
                       input=yaml.safe_dump(cfg), text=True, check=True)
        join = baked("kubeadm", "join", "--config", "/root/join.yaml", check=False)
        assert join.returncode == 0, join.stdout[-3000:] + join.stderr[-3000:]
        yield {"ip": ip, "port": port, "join": join.stdout}
    finally:
        kubectl("delete", "node", NAME, "--ignore-not-found", "--wait=false", check=False)
        sh("docker", "rm", "-f", "-v", CONTAINER, check=False)
        sh("losetup", "-d", loop, check=False)
        os.remove(disk.name)


def test_the_baked_node_joins_as_a_ready_node(joined):
    def ready():
        proc = kubectl("get", "node", NAME, "-o", "json", check=False)
        if proc.returncode != 0:
            return False
        conditions = json.loads(proc.stdout)["status"].get("conditions") or []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
    wait_for("Node %s Ready" % NAME, ready, timeout=120)
    assert "This node has joined the cluster" in joined["join"]


def test_its_kubelet_pulls_in_parallel_from_the_cluster_record_and_the_images_patch(joined):
    config = yaml.safe_load(baked("cat", "/var/lib/kubelet/config.yaml").stdout)
    assert config["serializeImagePulls"] is False
    patch = yaml.safe_load(baked("cat", kubeadm.PATCHES + "/kubeletconfiguration-kubescale+merge.yaml").stdout)
    assert patch["serializeImagePulls"] is False
    assert "Applied patch of type \"application/merge-patch+json\" to target \"kubeletconfiguration\"" in joined["join"]


def test_it_boots_tuned_sysctls_runtime_on_the_ssd_and_preloaded_images(joined):
    assert baked("grep", "-c", "gc_thresh", "/etc/sysctl.d/90-kubescale-arp.conf").stdout.strip() == "6"

    def docker_on_ssd():
        info = baked("docker", "info", "--format", "{{.Driver}} {{.DockerRootDir}}", check=False).stdout.strip()
        return info == "overlay2 /mnt/local-ssd/docker"
    wait_for("docker on the SSD", docker_on_ssd, timeout=120)
    assert baked("findmnt", "-n", "-o", "SOURCE", "/mnt/local-ssd").stdout.strip() == "/dev/sdb"
    # the image the bake preloaded (scripts/bake.sh), as docker lists it: Docker Hub names without docker.io/
    wait_for("the preloaded pause image", lambda: PAUSE_IMAGE in baked("docker", "image", "ls", "--format",
                                                                       "{{.Repository}}:{{.Tag}}").stdout.split(),
             timeout=120)


def test_the_audit_finds_the_joined_node_green(joined, tmp_path):
    inv = tmp_path / "hosts.yml"
    inv.write_text(yaml.safe_dump({"all": {"children": {"kube_node_cpu": {"hosts": {NAME: {
        "ansible_host": "127.0.0.1", "ansible_port": joined["port"], "ansible_user": "root",
        "ansible_ssh_private_key_file": SSH_KEY, "ansible_python_interpreter": "/usr/bin/python3",
        "lab_ip": joined["ip"]}}}}}}))
    deadline = time.time() + 60
    while sh("ssh", "-i", SSH_KEY, "-p", str(joined["port"]), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
             "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "root@127.0.0.1", "true",
             check=False).returncode != 0:
        assert time.time() < deadline, "the baked node answers SSH"
        time.sleep(1)
    report = tmp_path / "report"
    proc = subprocess.run(["ansible-playbook", "-i", str(inv), "playbooks/audit.yml", "-e", "fleet_audit_hosts=all",
                           "-e", "fleet_audit_report_dir=%s" % report], cwd=REPO, env=ENV, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:]
    with open(report / "audit.json") as f:
        doc = json.load(f)
    assert doc["nodes"][NAME]["status"] == "green", doc["failing"]
    areas = {c["area"] for c in doc["nodes"][NAME]["checks"]}
    assert {"sysctl", "local_ssd", "runtime", "boot"} <= areas
