"""The kubescale.tuning lab: a small fleet of real systemd nodes on one Debian 12 machine.

Standard library plus the docker CLI.  Commands:

  image     build (or reuse) the node base image: debootstrap -> docker import, cached by content
  pause-image  build (or reuse) the lab's pause image on this docker (image_preload's builder in the lab)
  up        start the nodes (idempotent) and write inventories/lab/hosts.yml
  down      remove the nodes, their volumes, their emulated resource disks and loop devices
  status    list the nodes
  redeploy  emulate an Azure redeploy of one node: wipe its resource disk, restart it

Node counts come from the environment: LAB_ETCD_NODES (3), LAB_ETCD_EVENTS_NODES (3),
LAB_CONTROL_PLANE_NODES (1), LAB_CPU_NODES (2), LAB_GPU_NODES (1), LAB_ETCD_KUBEADM_NODES (3: kubeadm's etcd as
static pods, run by a stand-in for the kubelet). The control plane node runs a real kube-apiserver,
kube-controller-manager and kube-scheduler on the kubeadm etcd, and kwok with LAB_KWOK_NODES (50) fake Nodes
(lab/controlplane.py).

The Debian mirror is read from this machine's apt sources; none is written into the repository.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import controlplane
from common import PKI, PREFIX, REPO, STATE, LabError, docker, install_standin, issue_cert, log, run  # noqa: F401

INVENTORY = os.path.join(REPO, "inventories", "lab", "hosts.yml")
IMAGE_REPO = "kubescale-lab-base"
LABEL = "io.kubescale.lab"
SUITE = "bookworm"
SSH_BASE_PORT = int(os.environ.get("LAB_SSH_BASE_PORT", "22200"))
DISK_SIZE = os.environ.get("LAB_DISK_SIZE", "2G")
# The nodes' own network, with a fixed address per node: etcd members name each other by address, and a
# restarted container on docker's default bridge may come back with another one.
NETWORK = "kubescale-lab"
SUBNET_PREFIX = os.environ.get("LAB_SUBNET_PREFIX", "172.30.213")

# Installed by debootstrap itself: enough to boot systemd and be reached by Ansible.
BOOT_PACKAGES = [
    "systemd", "systemd-sysv", "dbus", "openssh-server", "python3", "python3-apt", "sudo",
    "iproute2", "procps", "kmod", "udev", "ca-certificates",
]
# Installed in a second stage with apt (services masked from starting): what later roles need.
ROLE_PACKAGES = [
    "docker.io", "containerd", "etcd-server", "etcd-client", "fio", "zstd", "e2fsprogs",
    "xfsprogs", "rsync", "ntfs-3g", "util-linux", "gdisk", "python3-yaml", "busybox-static",
]
# Services the roles enable themselves: off in the base image so a node boots clean.
DISABLED_UNITS = ["docker.service", "docker.socket", "containerd.service", "etcd.service"]
# Units that cannot work in a container.
MASKED_UNITS = [
    "systemd-udevd.service", "systemd-udevd-control.socket", "systemd-udevd-kernel.socket",
    "systemd-udev-trigger.service", "systemd-modules-load.service", "getty@tty1.service",
    "console-getty.service", "systemd-firstboot.service",
]

# The Azure udev rules make /dev/disk/azure/resource point at the temp disk; in the lab the node
# gets its emulated resource disk as /dev/sdb, and this unit recreates the link at every boot.
AZURE_LINK_UNIT = """[Unit]
Description=Lab: emulate Azure's /dev/disk/azure/resource udev link
DefaultDependencies=no
Before=local-fs-pre.target
Wants=local-fs-pre.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'if [ -b /dev/sdb ]; then mkdir -p /dev/disk/azure && ln -sfn ../../sdb /dev/disk/azure/resource; fi'

[Install]
WantedBy=sysinit.target
"""


# --------------------------------------------------------------------------- mirror discovery

def parse_apt_sources(sources_list_text, deb822_texts):
    """Return the first Debian mirror URI that serves the bookworm suite (not security)."""
    candidates = []
    for line in sources_list_text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line.startswith("deb "):
            continue
        parts = re.sub(r"\[[^]]*\]", "", line).split()
        if len(parts) >= 3:
            candidates.append((parts[1], [parts[2]]))
    for text in deb822_texts:
        for stanza in re.split(r"\n\s*\n", text):
            fields = {}
            for line in stanza.splitlines():
                if line.startswith("#") or ":" not in line or line[0].isspace():
                    continue
                key, value = line.split(":", 1)
                fields[key.strip().lower()] = value.strip()
            if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes") == "no":
                continue
            for uri in fields.get("uris", "").split():
                candidates.append((uri, fields.get("suites", "").split()))
    for uri, suites in candidates:
        if SUITE in suites and "security" not in uri:
            return uri.rstrip("/")
    raise LabError("no Debian %s mirror found in this machine's apt sources" % SUITE)


def machine_mirror():
    sources = ""
    if os.path.exists("/etc/apt/sources.list"):
        with open("/etc/apt/sources.list") as f:
            sources = f.read()
    deb822 = []
    d = "/etc/apt/sources.list.d"
    if os.path.isdir(d):
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            with open(path) as f:
                if name.endswith(".sources"):
                    deb822.append(f.read())
                elif name.endswith(".list"):
                    sources += "\n" + f.read()
    return parse_apt_sources(sources, deb822)


# --------------------------------------------------------------------------- base image

def image_tag():
    """The cache key: everything that shapes the image, not the mirror it came from."""
    h = hashlib.sha256()
    for part in (SUITE, BOOT_PACKAGES, ROLE_PACKAGES, DISABLED_UNITS, MASKED_UNITS, AZURE_LINK_UNIT,
                 "recipe-3"):
        h.update(json.dumps(part).encode())
    return "%s:%s" % (IMAGE_REPO, h.hexdigest()[:12])


def image_exists(tag):
    return docker("image", "inspect", tag, check=False).returncode == 0


def docker_import(root, tag, cmd, kind):
    """The root filesystem at `root` as the image `tag` (its CMD `cmd`, labelled as the lab's `kind` image)."""
    tar = subprocess.Popen(["tar", "-C", root, "--numeric-owner", "-cf", "-", "."], stdout=subprocess.PIPE)
    imp = subprocess.run(["docker", "import", "--change", "CMD " + cmd, "--change", "LABEL %s=%s" % (LABEL, kind),
                          "-", tag], stdin=tar.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         check=False)
    tar.stdout.close()
    if tar.wait() != 0 or imp.returncode != 0:
        raise LabError("docker import failed: %s" % imp.stderr.strip())
    log("built %s" % tag)


def needs_build(tag, force, what):
    """Whether the image `tag` is to be built (not cached, or forced); debootstrap must be there to build it."""
    if image_exists(tag) and not force:
        log("%s image %s is cached" % (what, tag))
        return False
    if shutil.which("debootstrap") is None:
        raise LabError("debootstrap is not installed (make deps installs it)")
    return True


def build_image(force=False):
    tag = image_tag()
    if not needs_build(tag, force, "base"):
        return tag
    mirror = machine_mirror()
    log("building %s with debootstrap from this machine's mirror (a few minutes)" % tag)
    work = tempfile.mkdtemp(prefix="kslab-rootfs-", dir=os.environ.get("LAB_BUILD_DIR", "/var/tmp"))
    root = os.path.join(work, "rootfs")
    mounted = []
    try:
        run(["debootstrap", "--variant=minbase", "--include=" + ",".join(BOOT_PACKAGES),
             SUITE, root, mirror], capture=False)
        with open(os.path.join(root, "etc/apt/sources.list"), "w") as f:
            f.write("deb %s %s main\n" % (mirror, SUITE))
        # No service may start inside the chroot.
        policy = os.path.join(root, "usr/sbin/policy-rc.d")
        with open(policy, "w") as f:
            f.write("#!/bin/sh\nexit 101\n")
        os.chmod(policy, 0o755)
        for fs, target in (("proc", "proc"), ("sysfs", "sys")):
            path = os.path.join(root, target)
            run(["mount", "-t", fs, fs, path])
            mounted.append(path)
        env = "DEBIAN_FRONTEND=noninteractive"
        run(["chroot", root, "env", env, "apt-get", "update"], capture=False)
        run(["chroot", root, "env", env, "apt-get", "install", "-y", "--no-install-recommends"]
            + ROLE_PACKAGES, capture=False)
        run(["chroot", root, "apt-get", "clean"])
        for path in reversed(mounted):
            run(["umount", path])
        mounted = []
        os.remove(policy)
        for unit in DISABLED_UNITS:
            run(["chroot", root, "systemctl", "disable", unit], check=False)
        for unit in MASKED_UNITS:
            run(["chroot", root, "systemctl", "mask", unit], check=False)
        with open(os.path.join(root, "etc/systemd/system/lab-azure-resource-link.service"), "w") as f:
            f.write(AZURE_LINK_UNIT)
        run(["chroot", root, "systemctl", "enable", "lab-azure-resource-link.service"])
        with open(os.path.join(root, "etc/ssh/sshd_config.d/lab.conf"), "w") as f:
            f.write("UseDNS no\nPermitRootLogin prohibit-password\nMaxStartups 200\nMaxSessions 50\n")
        os.makedirs(os.path.join(root, "root/.ssh"), mode=0o700, exist_ok=True)
        for path in ("etc/machine-id", "var/lib/dbus/machine-id"):
            full = os.path.join(root, path)
            if os.path.lexists(full):
                os.remove(full)
        open(os.path.join(root, "etc/machine-id"), "w").close()
        shutil.rmtree(os.path.join(root, "var/lib/apt/lists"), ignore_errors=True)
        os.makedirs(os.path.join(root, "var/lib/apt/lists/partial"), exist_ok=True)
        docker_import(root, tag, '["/sbin/init"]', "base")
        return tag
    finally:
        for path in reversed(mounted):
            run(["umount", "-l", path], check=False)
        shutil.rmtree(work, ignore_errors=True)


# An older Debian whose python3 (3.9) has no tomllib: the molecule scenario toml_legacy runs the collection's TOML
# code there for real (the vendored tomli), as on Ubuntu 22.04's 3.10 nodes. No systemd, no sshd: molecule reaches
# it through docker.
LEGACY_REPO = "kubescale-lab-legacy"
LEGACY_SUITE = "bullseye"
LEGACY_PACKAGES = ["python3", "python3-yaml"]


def legacy_image_tag():
    h = hashlib.sha256(json.dumps([LEGACY_SUITE, LEGACY_PACKAGES, "recipe-1"]).encode())
    return "%s:%s" % (LEGACY_REPO, h.hexdigest()[:12])


def build_legacy_image(force=False):
    tag = legacy_image_tag()
    if not needs_build(tag, force, "legacy"):
        return tag
    log("building %s (Debian %s) with debootstrap from this machine's mirror" % (tag, LEGACY_SUITE))
    work = tempfile.mkdtemp(prefix="kslab-legacy-", dir=os.environ.get("LAB_BUILD_DIR", "/var/tmp"))
    root = os.path.join(work, "rootfs")
    try:
        run(["debootstrap", "--variant=minbase", "--include=" + ",".join(LEGACY_PACKAGES), LEGACY_SUITE, root,
             machine_mirror()], capture=False)
        shutil.rmtree(os.path.join(root, "var/lib/apt/lists"), ignore_errors=True)
        docker_import(root, tag, '["sleep", "infinity"]', "legacy")
        return tag
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------- nodes

CLASSES = [
    # (group, short name, env var, default count, runs dockerd, first host number, how many the range holds)
    # Each class owns a range of the /24: changing one class's count never moves another class's nodes (the etcd
    # members' certificates carry their addresses).
    ("etcd", "etcd", "LAB_ETCD_NODES", 3, False, 10, 20),
    ("etcd_events", "etcd-events", "LAB_ETCD_EVENTS_NODES", 3, False, 30, 20),
    ("kube_control_plane", "cp", "LAB_CONTROL_PLANE_NODES", 1, True, 50, 10),
    # kubeadm's etcd: static pods run by the lab's stand-in kubelet (lab/fixtures/kubelet-standin.py), TLS on.
    # A child of the etcd group: the same playbook moves it.
    ("etcd_kubeadm", "etcd-kubeadm", "LAB_ETCD_KUBEADM_NODES", 3, False, 60, 10),
    ("kube_node_gpu", "gpu", "LAB_GPU_NODES", 1, True, 70, 60),
    ("kube_node_cpu", "cpu", "LAB_CPU_NODES", 2, True, 130, 120),
]
# Groups written as children of another group in the inventory.
PARENT_GROUPS = {"etcd_kubeadm": "etcd"}


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


def disk_path(name):
    return os.path.join(STATE, "disks", name + ".img")


def loop_for(path):
    """The loop device backing `path`, attaching one if there is none."""
    out = run(["losetup", "-j", path]).stdout.strip()
    if out:
        return out.split(":", 1)[0]
    return run(["losetup", "--find", "--show", path]).stdout.strip()


def ensure_disk(name):
    path = disk_path(name)
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        run(["truncate", "-s", DISK_SIZE, path])
    return loop_for(path)


def used_ports():
    """SSH ports of all lab nodes, in one docker call."""
    out = docker("ps", "-a", "--filter", "label=%s=node" % LABEL,
                 "--format", '{{.Label "%s.ssh-port"}}' % LABEL).stdout
    return set(int(p) for p in out.split() if p.isdigit())


def key_id(pubkey):
    with open(pubkey, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


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
            "--label", "%s.ip=%s" % (LABEL, node["ip"]), "--network", NETWORK, "--ip", node["ip"],
            "--stop-signal", "SIGRTMIN+3",
            "--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN", "--cgroupns=host",
            "--security-opt", "apparmor=unconfined",
            "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "--tmpfs", "/run", "--tmpfs", "/run/lock",
            "-v", "%s:/root/.ssh/authorized_keys:ro" % pubkey,
            "-p", "127.0.0.1:%d:22" % port,
            "--device", "%s:/dev/sdb" % loop]
    if node["dockerd"]:
        argv += ["-v", "%s-docker:/var/lib/docker" % cname]
    if node["group"] == "etcd_kubeadm" and os.path.exists("/dev/fuse"):
        argv += ["--device", "/dev/fuse"]  # bench/etcd_disk.py mounts its emulated network disk there
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


def write_inventory():
    groups = {c[0]: {} for c in CLASSES}
    for c in sorted(existing_containers()):
        labels = inspect(c)["Config"]["Labels"]
        groups[labels[LABEL + ".group"]][c[len(PREFIX):]] = {
            "ansible_port": int(labels[LABEL + ".ssh-port"]),
            "lab_container": c,
            "lab_ip": labels.get(LABEL + ".ip", ""),
        }
    lines = ["---", "# Written by `make lab` (lab/lab.py): the lab's nodes. Do not edit; group_vars hold settings.",
             "all:", "  children:"]
    for group, hosts in groups.items():
        lines.append("    %s:" % group)
        if not hosts:
            lines.append("      hosts: {}")
            continue
        lines.append("      hosts:")
        for name, hv in hosts.items():
            lines.append("        %s:" % name)
            lines.append("          ansible_port: %d" % hv["ansible_port"])
            lines.append("          lab_container: %s" % hv["lab_container"])
            lines.append("          lab_ip: %s" % hv["lab_ip"])
        children = [child for child, parent in PARENT_GROUPS.items() if parent == group]
        if children:
            lines.append("      children:")
            lines += ["        %s:" % child for child in children]
    lines += ["    kube_node:", "      children:", "        kube_node_cpu:", "        kube_node_gpu:"]
    os.makedirs(os.path.dirname(INVENTORY), exist_ok=True)
    tmp = INVENTORY + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, INVENTORY)
    log("wrote %s" % os.path.relpath(INVENTORY, REPO))


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


PAUSE_IMAGE = "kubescale-lab/pause:3.9"


def ensure_pause_image():
    """The lab's pause image on the controller's docker (image_preload's builder in the lab): no registry here.

    A static busybox that sleeps, built FROM scratch; the lab inventory names it image_preload_pause_image.
    """
    if docker("image", "inspect", PAUSE_IMAGE, check=False).returncode == 0:
        return
    if not os.path.exists("/bin/busybox"):
        sys.exit("lab: /bin/busybox (busybox-static) is needed to build %s" % PAUSE_IMAGE)
    with tempfile.TemporaryDirectory() as d:
        shutil.copy("/bin/busybox", os.path.join(d, "pause"))
        with open(os.path.join(d, "Dockerfile"), "w") as f:
            f.write('FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause", "sleep", "2147483647"]\n')
        docker("build", "-q", "-t", PAUSE_IMAGE, d)
    log("built %s" % PAUSE_IMAGE)


def cmd_pause_image(_args):
    ensure_pause_image()
    print(PAUSE_IMAGE)


def cmd_up(_args):
    tag = build_image()
    ensure_pause_image()
    nodes = wanted_nodes()
    have = set(existing_containers())
    ensure_host_limits(len(nodes) + len(have))
    ensure_network()
    key = ssh_key()
    started = {}
    for node in nodes:
        cname = PREFIX + node["name"]
        if cname in have:
            state = inspect(cname)
            labels = state["Config"]["Labels"]
            devices = state["HostConfig"]["Devices"] or [{}]
            stale = (labels.get(LABEL + ".key") != key_id(key + ".pub")
                     or labels.get(LABEL + ".disk") != disk_path(node["name"])
                     or not os.path.exists(disk_path(node["name"]))
                     or devices[0].get("PathOnHost") != loop_for(disk_path(node["name"]))
                     or labels.get(LABEL + ".ip") != node["ip"])
            if stale:
                # made by another checkout, or its loop device is gone (machine restarted): recreate
                log("recreating %s (another checkout's key or a stale resource disk)" % cname)
                remove_node(cname, keep_disk=labels.get(LABEL + ".disk") == disk_path(node["name"]))
                started[node["name"]] = start_node(node, tag, key + ".pub")
                continue
            if state["Config"]["Image"] != tag:
                log("%s runs an older base image; recreate it with `make lab-down lab`" % cname)
            if not state["State"]["Running"]:
                docker("start", cname)
            started[node["name"]] = int(state["Config"]["Labels"][LABEL + ".ssh-port"])
            continue
        started[node["name"]] = start_node(node, tag, key + ".pub")
        log("started %s (ssh 127.0.0.1:%d)" % (cname, started[node["name"]]))
    wanted = set(PREFIX + n["name"] for n in nodes)
    for cname in sorted(have - wanted):
        remove_node(cname)
        log("removed %s (beyond the wanted node counts)" % cname)
    wait_ssh(started, key)
    write_inventory()
    ensure_etcd([n for n in nodes if n["group"] == "etcd"])
    ensure_kubeadm_etcd([n for n in nodes if n["group"] == "etcd_kubeadm"])
    controlplane.ensure_control_plane([n for n in nodes if n["group"] == "kube_control_plane"],
                                      [n for n in nodes if n["group"] == "etcd_kubeadm"], ensure_pki())
    log("%d nodes up" % len(started))


ETCD_ENV = """# Written by lab/lab.py: the lab's main etcd cluster, as a distro-package install leaves it (data on the OS disk).
ETCD_NAME="{name}"
ETCD_DATA_DIR="/var/lib/etcd/default"
ETCD_LISTEN_PEER_URLS="http://{ip}:2380"
ETCD_LISTEN_CLIENT_URLS="http://{ip}:2379,http://127.0.0.1:2379"
ETCD_INITIAL_ADVERTISE_PEER_URLS="http://{ip}:2380"
ETCD_ADVERTISE_CLIENT_URLS="http://{ip}:2379"
ETCD_INITIAL_CLUSTER="{cluster}"
ETCD_INITIAL_CLUSTER_STATE="new"
ETCD_INITIAL_CLUSTER_TOKEN="kubescale-lab"
"""


def ensure_pki():
    """The lab's etcd CA and the API server's etcd client certificate, as kubeadm makes them (openssl on the host).

    The CA stays on the controller too: events_etcd signs the Events members' certificates with it, so the API
    server's one etcd client certificate is trusted by both clusters.
    """
    os.makedirs(PKI, exist_ok=True)
    ca_key, ca_crt = os.path.join(PKI, "etcd-ca.key"), os.path.join(PKI, "etcd-ca.crt")
    cl_key, cl_crt = os.path.join(PKI, "apiserver-etcd-client.key"), os.path.join(PKI, "apiserver-etcd-client.crt")
    if not os.path.exists(ca_crt):
        run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650", "-subj", "/CN=etcd-ca",
             "-keyout", ca_key, "-out", ca_crt])
    if not os.path.exists(cl_crt):
        csr = os.path.join(PKI, "apiserver-etcd-client.csr")
        ext = os.path.join(PKI, "client.ext")
        with open(ext, "w") as f:
            f.write("extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n")
        run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj",
             "/O=system:masters/CN=kube-apiserver-etcd-client", "-keyout", cl_key, "-out", csr])
        run(["openssl", "x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial",
             "-days", "3650", "-extfile", ext, "-out", cl_crt])
    return {"etcd/ca.crt": ca_crt, "apiserver-etcd-client.crt": cl_crt, "apiserver-etcd-client.key": cl_key}


ETCD_TEST_KEYS = 300


def ensure_etcd(members, timeout=120):
    """Form the lab's main etcd cluster (what kubeadm or kubespray left before us), once: nodes that already have
    a configuration are left alone (the roles own them from then on)."""
    if not members:
        return
    cluster = ",".join("%s=http://%s:2380" % (m["name"], m["ip"]) for m in members)
    todo = []
    for m in members:
        cname = PREFIX + m["name"]
        if docker("exec", cname, "grep", "-q", "^ETCD_INITIAL_CLUSTER=", "/etc/default/etcd", check=False).returncode == 0:
            continue
        run(["docker", "exec", "-i", cname, "sh", "-c", "cat > /etc/default/etcd"],
            input_data=ETCD_ENV.format(name=m["name"], ip=m["ip"], cluster=cluster))
        todo.append(cname)
    if not todo:
        return
    for cname in todo:
        docker("exec", cname, "systemctl", "enable", "--now", "--no-block", "etcd.service")
    deadline = time.time() + timeout
    endpoints = ",".join("http://%s:2379" % m["ip"] for m in members)
    while True:
        proc = docker("exec", PREFIX + members[0]["name"], "etcdctl", "--endpoints=" + endpoints,
                      "endpoint", "health", check=False)
        if proc.returncode == 0:
            break
        if time.time() > deadline:
            raise LabError("the lab's etcd cluster is not healthy after %ds: %s" % (timeout, proc.stderr.strip()))
        time.sleep(1)
    # Data to keep: tests count these keys on every member after each move, rejoin and failure.
    docker("exec", PREFIX + members[0]["name"], "sh", "-c",
           "i=1; while [ $i -le %d ]; do etcdctl put /kubescale-test/$i value-$i >/dev/null || exit 1; "
           "i=$((i+1)); done" % ETCD_TEST_KEYS)
    log("etcd cluster formed on %s, %d keys written" % (", ".join(m["name"] for m in members), ETCD_TEST_KEYS))


KUBEADM_ETCD_PKI = "/etc/kubernetes/pki/etcd"


def kubeadm_etcdctl(*args):
    """etcdctl on a kubeadm member, with kubeadm's healthcheck client certificate, against the whole cluster."""
    return ["etcdctl", "--cacert=%s/ca.crt" % KUBEADM_ETCD_PKI, "--cert=%s/healthcheck-client.crt" % KUBEADM_ETCD_PKI,
            "--key=%s/healthcheck-client.key" % KUBEADM_ETCD_PKI] + list(args)


def ensure_kubeadm_etcd(members, timeout=120):
    """Form the lab's kubeadm-style etcd cluster, once: what `kubeadm init`/`join` leave on stacked control plane
    nodes - PKI under /etc/kubernetes/pki/etcd (server, peer and healthcheck-client certificates signed by the etcd
    CA), a static pod manifest (lab/fixtures/etcd.yaml.tmpl, data on the OS disk at /var/lib/etcd) - and the lab's
    stand-in kubelet running it. Nodes with a manifest (or one etcd_local_disk holds) are left alone."""
    if not members:
        return
    ensure_pki()
    ca_key, ca_crt = os.path.join(PKI, "etcd-ca.key"), os.path.join(PKI, "etcd-ca.crt")
    hc_key, hc_crt = issue_cert("healthcheck-client", "/O=system:masters/CN=kube-etcd-healthcheck-client",
                                ["extendedKeyUsage=clientAuth", "keyUsage=critical,digitalSignature,keyEncipherment"],
                                ca_crt, ca_key, os.path.join(PKI, "kubeadm-etcd"))
    with open(os.path.join(REPO, "lab", "fixtures", "etcd.yaml.tmpl")) as f:
        fixture = f.read()
    cluster = ",".join("%s=https://%s:2380" % (m["name"], m["ip"]) for m in members)
    todo = []
    for m in members:
        cname = PREFIX + m["name"]
        if docker("exec", cname, "sh", "-c", "test -e /etc/kubernetes/manifests/etcd.yaml || "
                  "test -e /etc/kubernetes/kubescale-held/etcd.yaml", check=False).returncode == 0:
            continue
        sans = "subjectAltName=DNS:%s,DNS:localhost,IP:%s,IP:127.0.0.1" % (m["name"], m["ip"])
        usage = ["extendedKeyUsage=serverAuth,clientAuth", "keyUsage=critical,digitalSignature,keyEncipherment", sans]
        out = os.path.join(PKI, "kubeadm-etcd", "%s-%s" % (m["name"], m["ip"]))  # the SANs carry the address
        files = {"ca.crt": ca_crt, "healthcheck-client.crt": hc_crt, "healthcheck-client.key": hc_key}
        for kind in ("server", "peer"):
            key, crt = issue_cert(kind, "/CN=" + m["name"], usage, ca_crt, ca_key, out)
            files[kind + ".key"], files[kind + ".crt"] = key, crt
        docker("exec", cname, "mkdir", "-p", "/etc/kubernetes/manifests", KUBEADM_ETCD_PKI,
               "/usr/local/lib/kubescale-lab")
        # kubeadm makes the data dir root's, mode 0700 (the image has the etcd package's, etcd's)
        docker("exec", cname, "sh", "-c", "rm -rf /var/lib/etcd && install -d -m 0700 -o root -g root /var/lib/etcd")
        for dest, src in files.items():
            with open(src) as f:
                run(["docker", "exec", "-i", cname, "sh", "-c", "umask 077; cat > %s/%s" % (KUBEADM_ETCD_PKI, dest)],
                    input_data=f.read())
        install_standin(cname)
        text = (fixture.replace("__ADDRESS__", m["ip"]).replace("__NAME__", m["name"])
                .replace("__INITIAL_CLUSTER__", cluster))
        run(["docker", "exec", "-i", cname, "sh", "-c", "umask 077; cat > /etc/kubernetes/manifests/etcd.yaml"],
            input_data=text)
        todo.append(cname)
    if not todo:
        return
    for cname in todo:
        docker("exec", cname, "systemctl", "daemon-reload")
        docker("exec", cname, "systemctl", "enable", "--now", "kubelet.service")
    first = PREFIX + members[0]["name"]
    endpoints = "--endpoints=" + ",".join("https://%s:2379" % m["ip"] for m in members)
    deadline = time.time() + timeout
    while True:
        proc = docker("exec", first, *kubeadm_etcdctl(endpoints, "endpoint", "health"), check=False)
        if proc.returncode == 0:
            break
        if time.time() > deadline:
            raise LabError("the lab's kubeadm etcd cluster is not healthy after %ds: %s" % (timeout, proc.stderr.strip()))
        time.sleep(1)
    docker("exec", first, "sh", "-c",
           "i=1; while [ $i -le %d ]; do %s put /kubescale-test/$i value-$i >/dev/null || exit 1; i=$((i+1)); done"
           % (ETCD_TEST_KEYS, " ".join(kubeadm_etcdctl(endpoints))))
    log("kubeadm etcd cluster (static pods) formed on %s, %d keys written"
        % (", ".join(m["name"] for m in members), ETCD_TEST_KEYS))


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


def cmd_down(_args):
    for c in existing_containers():
        remove_node(c)
        log("removed %s" % c)
    if os.path.exists(INVENTORY):
        os.remove(INVENTORY)


def cmd_status(_args):
    for c in sorted(existing_containers()):
        st = inspect(c)
        labels = st["Config"]["Labels"]
        print("%-22s %-20s %-8s ssh 127.0.0.1:%s"
              % (c, labels[LABEL + ".group"], st["State"]["Status"], labels[LABEL + ".ssh-port"]))


def cmd_image(args):
    print(build_image(force=args.force))


def cmd_legacy_image(args):
    print(build_legacy_image(force=args.force))


def wait_released(loop, timeout=60):
    """Until no file system holds `loop` (an exclusive open succeeds). A stopped node's ext4 can outlive its container
    for a moment on a busy machine; wiping before it let go would let its last writeback land after the wipe."""
    deadline = time.time() + timeout
    while True:
        try:
            os.close(os.open(loop, os.O_RDONLY | os.O_EXCL))
            return
        except OSError as exc:
            if time.time() > deadline:
                raise LabError("%s is still in use %ds after its node stopped: %s" % (loop, timeout, exc)) from exc
            time.sleep(0.5)


def wipe_disk(name, layout):
    """Emulate what Azure hands back after a redeploy: a blank disk, or NTFS with the readme."""
    path = disk_path(name)
    loop = loop_for(path)
    wait_released(loop)
    run(["wipefs", "-a", loop], check=False)
    run(["dd", "if=/dev/zero", "of=" + loop, "bs=1M", "count=16", "conv=fsync", "status=none"])
    if layout == "ntfs":
        run(["mkntfs", "-F", "-Q", "-L", "Temporary Storage", loop])
        mnt = tempfile.mkdtemp(prefix="kslab-ntfs-")
        try:
            run(["mount", "-t", "ntfs-3g", loop, mnt])
            with open(os.path.join(mnt, "DATALOSS_WARNING_README.txt"), "w") as f:
                f.write("WARNING: THIS IS A TEMPORARY DISK.\n")
        finally:
            run(["umount", mnt], check=False)
            os.rmdir(mnt)


def cmd_redeploy(args):
    cname = PREFIX + args.node
    if cname not in existing_containers():
        raise LabError("no lab node %s" % args.node)
    docker("stop", cname)
    wipe_disk(args.node, args.disk)
    docker("start", cname)
    wait_ssh({args.node: int(inspect(cname)["Config"]["Labels"][LABEL + ".ssh-port"])}, ssh_key())
    log("redeployed %s (resource disk came back %s)" % (args.node, args.disk))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("image")
    p.add_argument("--force", action="store_true")
    p.set_defaults(func=cmd_image)
    p = sub.add_parser("legacy-image", help="the Debian 11 (Python 3.9) image of the toml_legacy molecule scenario")
    p.add_argument("--force", action="store_true")
    p.set_defaults(func=cmd_legacy_image)
    sub.add_parser("up").set_defaults(func=cmd_up)
    sub.add_parser("pause-image").set_defaults(func=cmd_pause_image)
    sub.add_parser("down").set_defaults(func=cmd_down)
    sub.add_parser("status").set_defaults(func=cmd_status)
    p = sub.add_parser("redeploy")
    p.add_argument("node")
    p.add_argument("--disk", choices=["blank", "ntfs"], default="ntfs")
    p.set_defaults(func=cmd_redeploy)
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except LabError as exc:
        print("lab: error: %s" % exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
