"""Each node's emulated Azure disks: the resource disk (a sparse file behind a loop device, wiped as a redeploy would)
and, on the etcd classes, the network disk etcd's data starts on.

An Azure VM's local SSD answers etcd's fdatasync in well under the 10 ms etcd_local_disk's gate asks, and its OS and
data disks are network disks (about 2 ms a write, the seed's figure). The lab gives the etcd classes both: their
resource disks are files in memory (/dev/shm), as fast as a local SSD, and their /var/lib/etcd is `slowdisk` (a FUSE
passthrough that waits 2 ms before every fsync, fixtures/kubescale-lab-netdisk.service). The gate then runs at its
production defaults: the SSD under 10 ms and no slower than the disk the member is on. Every other node's resource
disk is a sparse file in lab/.state/disks.
"""

import hashlib
import os
import tempfile
import time

from .common import REPO, STATE, LabError, docker, put_file, run

DISK_SIZE = os.environ.get("LAB_DISK_SIZE", "2G")
# The node name prefixes of the etcd classes (lab/nodes.py): the main etcd, the Events etcd, kubeadm's etcd.
MEMORY_CLASSES = ("etcd", "etcd-events", "etcd-kubeadm")
# The groups whose members start on a network disk (the Events members are made on the SSD).
NETDISK_GROUPS = ("etcd", "etcd_kubeadm")
# One directory per checkout, as lab/.state is.
MEMORY_DIR = os.path.join(os.environ.get("LAB_MEMORY_DISKS", "/dev/shm/kubescale-lab-disks"),
                          hashlib.sha256(os.path.realpath(STATE).encode()).hexdigest()[:12])
NETDISK_UNIT = "kubescale-lab-netdisk.service"


def memory_backed(name):
    """Whether node `name`'s resource disk is in memory: a node of an etcd class."""
    return name.rsplit("-", 1)[0] in MEMORY_CLASSES


def disk_path(name):
    if memory_backed(name):
        return os.path.join(MEMORY_DIR, name + ".img")
    return os.path.join(STATE, "disks", name + ".img")


def ensure_netdisk(cname, units=("etcd.service", "kubelet.service")):
    """The node's /var/lib/etcd on the emulated network disk, mounted now and at every boot before `units`."""
    with open(os.path.join(REPO, "lab", "fixtures", NETDISK_UNIT)) as f:
        put_file(cname, "/etc/systemd/system/" + NETDISK_UNIT, f.read(), mode="0644")
    for unit in units:
        put_file(cname, "/etc/systemd/system/%s.d/kubescale-lab-netdisk.conf" % unit,
                 "[Unit]\nRequires=%s\nAfter=%s\n" % (NETDISK_UNIT, NETDISK_UNIT), mode="0644")
    docker("exec", cname, "systemctl", "daemon-reload")
    docker("exec", cname, "systemctl", "enable", "--now", NETDISK_UNIT)
    if docker("exec", cname, "mountpoint", "-q", "/var/lib/etcd", check=False).returncode != 0:
        raise LabError("%s: the emulated network disk is not mounted at /var/lib/etcd (journalctl -u %s)"
                       % (cname, NETDISK_UNIT))


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
