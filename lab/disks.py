"""Each node's emulated Azure resource disk: a sparse file behind a loop device, wiped as a redeploy would."""

import os
import tempfile
import time

from .common import STATE, LabError, run

DISK_SIZE = os.environ.get("LAB_DISK_SIZE", "2G")


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
