"""The lab's nodes: which ones (a class each, a fixed address range per class), their containers, SSH keys and ports."""

import hashlib
import json
import os
import time

from .common import LABEL, PREFIX, STATE, LabError, docker, log, run
from .disks import NETDISK_GROUPS, disk_path, ensure_disk

SSH_BASE_PORT = int(os.environ.get("LAB_SSH_BASE_PORT", "22200"))
# The nodes' own network, with a fixed address per node: etcd members name each other by address, and a
# restarted container on docker's default bridge may come back with another one.
NETWORK = "kubescale-lab"
SUBNET_PREFIX = os.environ.get("LAB_SUBNET_PREFIX", "172.30.213")
CLASSES = [
    # (group, short name, env var, default count, runs dockerd, first host number, how many the range holds)
    # The load balancer in front of the kube-apiservers (kubeadm's controlPlaneEndpoint): HAProxy, as kubeadm's HA guide
    # suggests. Lab infrastructure, not a node class: not in the inventory.
    ("lab_lb", "lb", "LAB_LB_NODES", 1, False, 250, 1),
    # Each class owns a range of the /24: changing one class's count never moves another class's nodes (the etcd
    # members' certificates carry their addresses).
    ("etcd", "etcd", "LAB_ETCD_NODES", 3, False, 10, 20),
    ("etcd_events", "etcd-events", "LAB_ETCD_EVENTS_NODES", 3, False, 30, 20),
    # kubeadm's HA shape: three API servers behind the load balancer, scheduler and controller manager electing leaders
    ("kube_control_plane", "cp", "LAB_CONTROL_PLANE_NODES", 3, True, 50, 10),
    # kubeadm's etcd: static pods run by the lab's stand-in kubelet (lab/fixtures/kubelet-standin.py), TLS on.
    # A child of the etcd group: the same playbook moves it.
    ("etcd_kubeadm", "etcd-kubeadm", "LAB_ETCD_KUBEADM_NODES", 3, False, 60, 10),
    ("kube_node_gpu", "gpu", "LAB_GPU_NODES", 1, True, 70, 60),
    ("kube_node_cpu", "cpu", "LAB_CPU_NODES", 2, True, 130, 120),
]
# Groups written as children of another group in the inventory.
PARENT_GROUPS = {"etcd_kubeadm": "etcd"}
# Lab infrastructure: nodes no playbook tunes, left out of the inventory.
INFRA_GROUPS = {"lab_lb"}
# The lab's Kubernetes build (lab/k8s/build.sh's cache, its `current` link the newest build), read-only in every node:
# kubeadm, the stand-in kubelet's checks and the control plane's binaries are links into it, as packages would be.
K8S_CACHE = os.environ.get("KUBESCALE_K8S_CACHE", "/var/cache/kubescale/k8s")
K8S_MOUNT = "/opt/kubescale-k8s"


def wanted_nodes():
    nodes = []
    for group, short, env, default, dockerd, first, size in CLASSES:
        raw = os.environ.get(env, str(default))
        if not raw.isdigit():
            raise LabError("%s must be a whole number, got %r" % (env, raw))
        if int(raw) > size:
            raise LabError("%s must be at most %d (the lab's addresses %s.%d-%d are %s's), got %s"
                           % (env, size, SUBNET_PREFIX, first, first + size - 1, group, raw))
        for i in range(1, int(raw) + 1):
            nodes.append({"name": "%s-%d" % (short, i), "group": group, "dockerd": dockerd,
                          "ip": "%s.%d" % (SUBNET_PREFIX, first + i - 1)})
    return nodes


def ensure_network():
    if docker("network", "inspect", NETWORK, check=False).returncode != 0:
        docker("network", "create", "--subnet", SUBNET_PREFIX + ".0/24", "--label", "%s=network" % LABEL, NETWORK)


def existing_containers():
    out = docker("ps", "-a", "--filter", "label=%s=node" % LABEL, "--format", "{{.Names}}").stdout
    return [n for n in out.split() if n.startswith(PREFIX)]


def inspect(container):
    return json.loads(docker("inspect", container).stdout)[0]


def ssh_key():
    key = os.path.join(STATE, "id_ed25519")
    if not os.path.exists(key):
        os.makedirs(STATE, exist_ok=True)
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "kubescale-lab", "-f", key])
    return key


def used_ports():
    """SSH ports of all lab nodes, in one docker call."""
    out = docker("ps", "-a", "--filter", "label=%s=node" % LABEL,
                 "--format", '{{.Label "%s.ssh-port"}}' % LABEL).stdout
    return set(int(p) for p in out.split() if p.isdigit())


def key_id(pubkey):
    with open(pubkey, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def why_stale(labels, devices, node, key, disk, disk_exists, loop_of):
    """Why a node's existing container cannot be kept ('' when it can): made with another checkout's key, its resource
    disk elsewhere or gone, its loop device detached (the machine restarted), or its address moved. `loop_of()` gives
    the disk's loop device (attaching one), asked only once the disk is known to be there."""
    if labels.get(LABEL + ".key") != key:
        return "another checkout's SSH key"
    if labels.get(LABEL + ".disk") != disk or not disk_exists:
        return "its resource disk is not %s" % disk
    if (devices or [{}])[0].get("PathOnHost") != loop_of():
        return "its resource disk's loop device is gone"
    if labels.get(LABEL + ".k8s-mount") != K8S_CACHE:
        return "it does not mount the lab's Kubernetes build"
    if labels.get(LABEL + ".ip") != node["ip"]:
        return "its address moved from %s to %s" % (labels.get(LABEL + ".ip"), node["ip"])
    if node.get("group") in NETDISK_GROUPS and labels.get(LABEL + ".netdisk") != "1":
        return "it was made without the emulated network disk under /var/lib/etcd"
    return ""


def start_node(node, tag, pubkey):
    cname = PREFIX + node["name"]
    loop = ensure_disk(node["name"])
    ports = used_ports()
    port = SSH_BASE_PORT
    while port in ports:
        port += 1
    argv = ["run", "-d", "--name", cname, "--hostname", node["name"],
            "--label", "%s=node" % LABEL, "--label", "%s.group=%s" % (LABEL, node["group"]),
            "--label", "%s.ssh-port=%d" % (LABEL, port),
            "--label", "%s.key=%s" % (LABEL, key_id(pubkey)), "--label", "%s.disk=%s" % (LABEL, disk_path(node["name"])),
            "--label", "%s.ip=%s" % (LABEL, node["ip"]), "--label", "%s.k8s-mount=%s" % (LABEL, K8S_CACHE),
            "--network", NETWORK, "--ip", node["ip"],
            "--stop-signal", "SIGRTMIN+3",
            "--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN", "--cgroupns=host",
            "--security-opt", "apparmor=unconfined",
            "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "--tmpfs", "/run", "--tmpfs", "/run/lock",
            "-v", "%s:/root/.ssh/authorized_keys:ro" % pubkey,
            "-p", "127.0.0.1:%d:22" % port,
            "--device", "%s:/dev/sdb" % loop, "-v", "%s:%s:ro" % (K8S_CACHE, K8S_MOUNT)]
    if node["dockerd"]:
        argv += ["-v", "%s-docker:/var/lib/docker" % cname]
    if node["group"] in NETDISK_GROUPS:
        # the emulated network disk under /var/lib/etcd (lab/disks.py), and bench/etcd_disk.py's own
        argv += ["--device", "/dev/fuse", "--label", "%s.netdisk=1" % LABEL]
    argv += [tag]
    docker(*argv)
    return port


def wait_ssh(nodes, key, timeout=120):
    deadline = time.time() + timeout
    pending = dict(nodes)
    while pending and time.time() < deadline:
        for name, port in list(pending.items()):
            proc = run(["ssh", "-i", key, "-p", str(port), "-o", "BatchMode=yes",
                        "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                        "-o", "ConnectTimeout=3", "-o", "LogLevel=ERROR", "root@127.0.0.1",
                        "systemctl is-system-running --wait >/dev/null 2>&1; true"], check=False)
            if proc.returncode == 0:
                del pending[name]
        if pending:
            time.sleep(1)
    if pending:
        raise LabError("nodes not reachable over SSH after %ds: %s" % (timeout, ", ".join(pending)))


def ensure_host_limits(count):
    """Each node's systemd takes inotify instances from the host's per-user budget (128 by default):
    past ~16 nodes new ones exit at once with status 255. Raise the budget to fit the fleet."""
    path = "/proc/sys/fs/inotify/max_user_instances"
    want = max(1024, 64 * count)
    with open(path) as f:
        have = int(f.read())
    if have < want:
        with open(path, "w") as f:
            f.write("%d\n" % want)
        log("raised fs.inotify.max_user_instances %d -> %d for %d nodes" % (have, want, count))


def remove_node(cname, keep_disk=False):
    """Remove a node container, its docker volume and (unless kept) its resource disk and loop device."""
    state = inspect(cname)
    path = state["Config"]["Labels"].get(LABEL + ".disk") or disk_path(cname[len(PREFIX):])  # maybe another checkout's
    devices = [d["PathOnHost"] for d in state["HostConfig"]["Devices"] or [] if d["PathOnHost"].startswith("/dev/loop")]
    docker("rm", "-f", "-v", cname)
    docker("volume", "rm", "-f", cname + "-docker", check=False)
    if keep_disk:
        return
    for dev in devices:
        # detach the node's loop device when it still backs this node's disk file, even one whose
        # checkout was deleted (losetup then shows the file as "(deleted)")
        back = run(["losetup", "-n", "-O", "BACK-FILE", dev], check=False).stdout.strip()
        if back.split(" (deleted)")[0] == path:
            run(["losetup", "-d", dev], check=False)
    if os.path.exists(path):
        os.remove(path)
