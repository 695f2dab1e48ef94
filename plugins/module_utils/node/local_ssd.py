# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: find the Azure local instance SSD and decide whether formatting it is safe.

One code path for two callers, so that converge and boot decide alike:
  - the module kubescale.tuning.local_ssd_probe (converge time, read-only);
  - the boot unit kubescale-local-ssd.service, which runs this very file (installed by the
    local_ssd role as /usr/local/lib/kubescale/local_ssd.py) as `boot --config FILE`.
Standard library only; external tools (blkid, ntfsls, mkfs.*, mount) through a runner.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import stat
import subprocess
import sys
import time

AZURE_RESOURCE = "/dev/disk/azure/resource"
AZURE_NVME_MODEL = "Microsoft NVMe Direct Disk"
README = "dataloss_warning_readme.txt"
NTFS_IGNORED = ("system volume information", README)  # what cloud-init ignores on a fresh temp disk
AGENT_MOUNTS = ("/mnt", "/mnt/resource")  # where waagent / cloud-init mount the resource disk
FSTYPES = ("ext4", "xfs")
LABEL_MAX = {"ext4": 16, "xfs": 12}
DIR_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*$")
LABEL_RE = re.compile(r"^[A-Za-z0-9_-]+$")


class SsdError(Exception):
    """A bad input or an unsafe disk: nothing has been touched."""


def default_runner(argv):
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    out, err = proc.communicate()
    return proc.returncode, out, err


def unescape_blkid(value):
    return re.sub(r"\\(.)", r"\1", value)


class Disks:
    """What the probe reads, below `root` ("/" for real), with commands run by `runner`."""

    def __init__(self, root="/", runner=None):
        self.root = root
        self.runner = runner or default_runner

    def p(self, absolute):
        return os.path.join(self.root, absolute.lstrip("/"))

    # ------------------------------------------------------------------ devices
    def is_block(self, dev):
        try:
            return stat.S_ISBLK(os.stat(self.p(dev)).st_mode)
        except OSError:
            return False

    def resolve(self, dev):
        """Absolute device path with symlinks (like /dev/disk/azure/resource) resolved, in root terms."""
        real = os.path.realpath(self.p(dev))
        root = os.path.realpath(self.root)
        if root != "/" and real.startswith(root + "/"):
            real = real[len(root):]
        return real

    def rdev(self, dev):
        try:
            st = os.stat(self.p(dev))
        except OSError:
            return None
        return (os.major(st.st_rdev), os.minor(st.st_rdev)) if stat.S_ISBLK(st.st_mode) else None

    def nvme_temp_disks(self):
        found = []
        sys_block = self.p("/sys/block")
        if not os.path.isdir(sys_block):
            return found
        for name in sorted(os.listdir(sys_block)):
            if not name.startswith("nvme"):
                continue
            try:
                with open(os.path.join(sys_block, name, "device", "model")) as f:
                    model = f.read().strip()
            except (IOError, OSError):
                continue
            if model == AZURE_NVME_MODEL:
                found.append("/dev/" + name)
        return found

    def sys_dir(self, dev):
        """The device's sysfs directory, found by device number (names differ inside containers)."""
        rdev = self.rdev(dev)
        candidates = []
        if rdev:
            candidates.append(self.p("/sys/dev/block/%d:%d" % rdev))
        candidates.append(self.p("/sys/class/block/" + os.path.basename(self.resolve(dev))))
        for path in candidates:
            if os.path.exists(path):
                return os.path.realpath(path)
        return None

    def partitions_of(self, dev):
        """Partitions of a whole disk, from sysfs: ['/dev/sdb1', ...]."""
        base = self.sys_dir(dev)
        out = []
        if base and os.path.isdir(base):
            name = os.path.basename(base)
            for entry in sorted(os.listdir(base)):
                if entry.startswith(name) and os.path.exists(os.path.join(base, entry, "partition")):
                    out.append("/dev/" + entry)
        return out

    def family_numbers(self, dev):
        """Device numbers of the whole disk `dev` is on and of all its partitions."""
        base = self.sys_dir(dev)
        if not base:
            return set([self.rdev(dev)]) if self.rdev(dev) else set()
        if os.path.exists(os.path.join(base, "partition")):
            base = os.path.dirname(base)
        dirs = [base] + [os.path.join(base, e) for e in sorted(os.listdir(base))
                         if os.path.exists(os.path.join(base, e, "partition"))]
        numbers = set()
        for d in dirs:
            try:
                with open(os.path.join(d, "dev")) as f:
                    major, minor = f.read().strip().split(":")
                numbers.add((int(major), int(minor)))
            except (IOError, OSError, ValueError):
                pass
        if self.rdev(dev):
            numbers.add(self.rdev(dev))
        return numbers

    def mounts(self):
        """[(major, minor, mountpoint, source)] from /proc/self/mountinfo."""
        out = []
        try:
            with open(self.p("/proc/self/mountinfo")) as f:
                lines = f.read().splitlines()
        except (IOError, OSError):
            return out
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or "-" not in fields:
                continue
            major, minor = fields[2].split(":")
            sep = fields.index("-")
            mountpoint = fields[4].replace("\\040", " ")
            out.append((int(major), int(minor), mountpoint, fields[sep + 2]))
        return out

    def mounted_at(self, dev):
        """Mount points of `dev`, matched by device number (works for /dev/sdb inside containers too).

        Mounts nested inside another mount of the same device (dockerd bind-mounts its data-root onto itself)
        are views of that filesystem, not places it is mounted: they are left out.
        """
        rdev = self.rdev(dev)
        points = set(mp for major, minor, mp, _src in self.mounts() if rdev and (major, minor) == rdev)
        return sorted(mp for mp in points if not nested(mp, points))

    def os_disk_numbers(self):
        """Device numbers holding /, /boot, /usr, /var (and their parent disks' partitions)."""
        numbers = set()
        for major, minor, mp, _src in self.mounts():
            if mp in ("/", "/boot", "/boot/efi", "/usr", "/var"):
                numbers.add((major, minor))
        return numbers

    # ------------------------------------------------------------------ content
    def blkid(self, dev):
        """{'TYPE':..., 'LABEL':..., 'PTTYPE':...} from a low-level probe; {} for a blank device."""
        rc, out, err = self.runner(["blkid", "-p", "-o", "export", dev])
        if rc == 2:
            return {}
        if rc != 0:
            raise SsdError("cannot probe %s with blkid: %s" % (dev, err.strip() or "exit %d" % rc))
        info = {}
        for line in out.splitlines():
            if "=" in line:
                key, value = line.split("=", 1)
                info[key] = unescape_blkid(value)
        return info

    def ntfs_root_entries(self, dev):
        rc, out, err = self.runner(["ntfsls", "-f", dev])
        if rc != 0:
            raise SsdError("cannot list the NTFS filesystem on %s (ntfsls from ntfs-3g): %s" % (dev, err.strip()))
        return [line.strip() for line in out.splitlines() if line.strip()]


# ---------------------------------------------------------------------- decisions

def choose_device(disks, configured=None):
    """(device, looked_at): the SSD to use, resolved; raises SsdError listing what was looked at."""
    looked = []
    if configured:
        looked.append("local_ssd_device=%s" % configured)
        if not disks.is_block(configured):
            raise SsdError("local_ssd_device: %s is not a block device (looked at: %s)" % (configured, configured))
        return disks.resolve(configured), looked
    looked.append(AZURE_RESOURCE + "-part1")
    if disks.is_block(AZURE_RESOURCE + "-part1"):
        return disks.resolve(AZURE_RESOURCE + "-part1"), looked
    looked.append(AZURE_RESOURCE)
    if disks.is_block(AZURE_RESOURCE):
        dev = disks.resolve(AZURE_RESOURCE)
        parts = disks.partitions_of(dev)
        looked.append("partitions of %s: %s" % (dev, ", ".join(parts) or "none"))
        return (parts[0] if parts else dev), looked
    looked.append("NVMe disks with model '%s'" % AZURE_NVME_MODEL)
    nvme = disks.nvme_temp_disks()
    if nvme:
        return nvme[0], looked
    raise SsdError("no local instance SSD found; looked at: %s. Set local_ssd_device to the disk to use"
                   % "; ".join(looked))


def nested(path, tops):
    """Whether `path` lies strictly inside one of `tops` (mount points)."""
    return any(path.startswith(top.rstrip("/") + "/") for top in tops if top != path)


def check_not_in_use(disks, dev, mount):
    """Refuse the OS disk and any disk holding filesystems mounted elsewhere than ours or the agent's."""
    family = disks.family_numbers(dev)
    if family & disks.os_disk_numbers():
        raise SsdError("local_ssd_device: %s is (on) the OS disk; refusing to touch it" % dev)
    allowed = set((mount,) + AGENT_MOUNTS)
    others = sorted(set(mp for major, minor, mp, _src in disks.mounts()
                        if (major, minor) in family and mp not in allowed and not nested(mp, allowed)))
    if others:
        raise SsdError("local_ssd_device: %s (or another partition of its disk) holds a filesystem mounted at %s; "
                       "unmount it or choose another device" % (dev, ", ".join(others)))


def verdict(disks, dev, label, fstype):
    """What the device holds and whether formatting it is safe, the way cloud-init judges Azure's disk.

    Returns dict(verdict=ours|blank|ntfs-readme-only|foreign, found=..., label=..., detail=...).
    """
    info = disks.blkid(dev)
    found_type = info.get("TYPE") or (("partition table " + info["PTTYPE"]) if info.get("PTTYPE") else None)
    found_label = info.get("LABEL")
    out = {"found": found_type, "found_label": found_label}
    if not info:
        out.update(verdict="blank", detail="no filesystem or partition table")
    elif found_label == label and info.get("TYPE") in FSTYPES:
        if info.get("TYPE") == fstype:
            out.update(verdict="ours", detail="%s labelled %s" % (fstype, label))
        else:
            out.update(verdict="foreign", detail="our label %s but %s, not local_ssd_fstype %s; reformatting would "
                                                 "drop its data: set local_ssd_force_format to switch"
                                                 % (label, info.get("TYPE"), fstype))
    elif info.get("TYPE") == "ntfs":
        entries = disks.ntfs_root_entries(dev)
        extra = [e for e in entries if e.lower() not in NTFS_IGNORED]
        if extra:
            out.update(verdict="foreign", detail="NTFS holding %d file(s) besides the data-loss readme: %s"
                                                 % (len(extra), ", ".join(sorted(extra)[:5])))
        else:
            out.update(verdict="ntfs-readme-only", detail="NTFS holding only %s" % (", ".join(entries) or "nothing"))
    else:
        out.update(verdict="foreign", detail="%s%s" % (found_type or "unknown content",
                                                       " labelled %s" % found_label if found_label else ""))
    return out


def validate_config(cfg):
    """Check a boot/probe configuration; raises SsdError naming the variable."""
    fstype = cfg.get("fstype")
    if fstype not in FSTYPES:
        raise SsdError("local_ssd_fstype: %r is not one of %s" % (fstype, ", ".join(FSTYPES)))
    label = cfg.get("label") or ""
    if not LABEL_RE.match(label) or len(label) > LABEL_MAX[fstype]:
        raise SsdError("local_ssd_label: %r must be 1-%d letters, digits, '_' or '-' for %s"
                       % (label, LABEL_MAX[fstype], fstype))
    mount = cfg.get("mount") or ""
    if not os.path.isabs(mount) or os.path.normpath(mount) != mount or mount == "/":
        raise SsdError("local_ssd_mount: %r must be an absolute, normalised path other than /" % mount)
    for i, d in enumerate(cfg.get("dirs") or []):
        if not isinstance(d, dict) or not DIR_NAME_RE.match(str(d.get("path", ""))) or ".." in d["path"].split("/"):
            raise SsdError("local_ssd_dirs[%d].path: %r must be a relative path inside the SSD mount, like "
                           "'etcd' or 'docker'" % (i, d.get("path") if isinstance(d, dict) else d))


def xfs_ftype_problem(runner, mount):
    """Why the xfs filesystem at mount cannot carry overlay2 (no ftype=1, so no d_type), or "" when it can."""
    rc, out, err = runner(["xfs_info", mount])
    if rc != 0:
        return "xfs_info %s failed (rc %d): %s" % (mount, rc, (err or out).strip())
    if not re.search(r"\bftype=1\b", out):
        return "the xfs filesystem at %s has no ftype=1, so overlay2 cannot use it (no d_type)" % mount
    return ""


# ---------------------------------------------------------------------- boot

def mkfs_argv(fstype, label, dev):
    if fstype == "xfs":
        return ["mkfs.xfs", "-f", "-L", label, "-n", "ftype=1", dev]
    return ["mkfs.ext4", "-F", "-q", "-L", label, "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1", dev]


def write_json_atomic(path, data):
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)


def boot_id(disks):
    try:
        with open(disks.p("/proc/sys/kernel/random/boot_id")) as f:
            return f.read().strip()
    except (IOError, OSError):
        return None


def ensure_dirs(mount, dirs):
    import grp
    import pwd
    for d in dirs:
        path = os.path.join(mount, d["path"])
        if not os.path.isdir(path):
            os.makedirs(path)
        uid = pwd.getpwnam(d.get("owner") or "root").pw_uid
        gid = grp.getgrnam(d.get("group") or "root").gr_gid
        os.chown(path, uid, gid)
        os.chmod(path, int(str(d.get("mode") or "0755"), 8))


def boot(cfg, disks, log, wait_seconds=60):
    """At boot: find the SSD, format it only when safe, mount it, recreate dirs, leave the wipe marker."""
    validate_config(cfg)
    deadline = time.time() + wait_seconds
    while True:
        try:
            dev, _looked = choose_device(disks, cfg.get("device"))
            break
        except SsdError:
            if time.time() > deadline:
                raise
            time.sleep(1)
    mount = cfg["mount"]
    check_not_in_use(disks, dev, mount)
    existing = disks.mounted_at(dev)
    if existing:
        log("%s already mounted at %s" % (dev, ", ".join(existing)))
        ensure_dirs(existing[0] if mount not in existing else mount, cfg.get("dirs") or [])
        return 0
    v = verdict(disks, dev, cfg["label"], cfg["fstype"])
    if v["verdict"] == "foreign":
        raise SsdError("%s holds %s: not formatting it; fix the disk or set local_ssd_force_format and converge"
                       % (dev, v["detail"]))
    if v["verdict"] in ("blank", "ntfs-readme-only"):
        log("%s is %s: formatting %s" % (dev, v["detail"], cfg["fstype"]))
        rc, _out, err = disks.runner(mkfs_argv(cfg["fstype"], cfg["label"], dev))
        if rc != 0:
            raise SsdError("mkfs on %s failed: %s" % (dev, err.strip()))
        marker = {"wiped_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "boot_id": boot_id(disks),
                  "device": dev, "found": v["verdict"], "by": "boot"}
        write_json_atomic(cfg["marker"], marker)
        log("wrote wipe marker %s" % cfg["marker"])
    if not os.path.isdir(mount):
        os.makedirs(mount, 0o755)
    rc, _out, err = disks.runner(["mount", "-t", cfg["fstype"], "-o", cfg.get("options") or "noatime", dev, mount])
    if rc != 0:
        raise SsdError("mount %s on %s failed: %s" % (dev, mount, err.strip()))
    ensure_dirs(mount, cfg.get("dirs") or [])
    log("%s mounted at %s" % (dev, mount))
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 3 or argv[0] != "boot" or argv[1] != "--config":
        sys.stderr.write("usage: local_ssd.py boot --config /etc/kubescale/local-ssd.json\n")
        return 2
    with open(argv[2]) as f:
        cfg = json.load(f)

    def log(msg):
        sys.stdout.write("kubescale-local-ssd: %s\n" % msg)
        sys.stdout.flush()

    try:
        return boot(cfg, Disks("/"), log)
    except SsdError as exc:
        sys.stderr.write("kubescale-local-ssd: %s\n" % exc)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
