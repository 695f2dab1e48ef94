"""Unit tests for the local SSD device choice and safe-format logic, on a temp root.

Device nodes are real block special files (mknod) so device numbers can be matched against a fake
/proc/self/mountinfo; blkid and ntfsls answers come from a fake runner.
"""

import json
import os

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils.node import local_ssd as L

SDA, SDA1, SDB, SDB1, NVME0, NVME1 = (8, 0), (8, 1), (8, 16), (8, 17), (259, 0), (259, 1)


class FakeRunner:
    def __init__(self, answers=None):
        self.answers = answers or {}
        self.calls = []

    def __call__(self, argv):
        self.calls.append(list(argv))
        return self.answers.get(tuple(argv), (2, "", ""))  # blkid: 2 = nothing found


def mknod(root, dev, numbers):
    path = os.path.join(root, dev.lstrip("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.mknod(path, 0o600 | 0o060000, os.makedev(*numbers))


def sysfs(root, disk, numbers, parts=(), model=None):
    """/sys/block/DISK (+ partitions), /sys/class/block and /sys/dev/block links, `dev` files."""
    base = os.path.join(root, "sys/block", disk)
    os.makedirs(os.path.join(base, "device"), exist_ok=True)
    if model:
        with open(os.path.join(base, "device/model"), "w") as f:
            f.write(model + "\n")
    cls = os.path.join(root, "sys/class/block")
    bydev = os.path.join(root, "sys/dev/block")
    os.makedirs(cls, exist_ok=True)
    os.makedirs(bydev, exist_ok=True)
    entries = [(disk, base, numbers)]
    for i, part in enumerate(parts, 1):
        os.makedirs(os.path.join(base, part))
        open(os.path.join(base, part, "partition"), "w").close()
        entries.append((part, os.path.join(base, part), (numbers[0], numbers[1] + i)))
    for name, path, num in entries:
        with open(os.path.join(path, "dev"), "w") as f:
            f.write("%d:%d\n" % num)
        os.symlink(path, os.path.join(cls, name))
        os.symlink(path, os.path.join(bydev, "%d:%d" % num))


def mountinfo(root, lines):
    path = os.path.join(root, "proc/self/mountinfo")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for i, (numbers, mp, src) in enumerate(lines):
            f.write("%d 1 %d:%d / %s rw,relatime shared:1 - ext4 %s rw\n" % (20 + i, numbers[0], numbers[1], mp, src))


@pytest.fixture
def azure(tmp_path):
    """An Azure VM: OS disk sda (sda1 at /), resource disk sdb (sdb1), Azure's udev links."""
    root = str(tmp_path)
    for dev, num in (("/dev/sda", SDA), ("/dev/sda1", SDA1), ("/dev/sdb", SDB), ("/dev/sdb1", SDB1)):
        mknod(root, dev, num)
    sysfs(root, "sda", SDA, ["sda1"])
    sysfs(root, "sdb", SDB, ["sdb1"])
    os.makedirs(os.path.join(root, "dev/disk/azure"))
    os.symlink("../../sdb", os.path.join(root, "dev/disk/azure/resource"))
    os.symlink("../../sdb1", os.path.join(root, "dev/disk/azure/resource-part1"))
    mountinfo(root, [(SDA1, "/", "/dev/sda1")])
    return root


# ---------------------------------------------------------------------- device choice

def test_resource_partition_is_preferred(azure):
    dev, looked = L.choose_device(L.Disks(azure))
    assert dev == "/dev/sdb1" and looked == ["/dev/disk/azure/resource-part1"]


def test_resource_disk_without_partition_link_uses_its_first_partition(azure):
    os.remove(os.path.join(azure, "dev/disk/azure/resource-part1"))
    assert L.choose_device(L.Disks(azure))[0] == "/dev/sdb1"


def test_whole_resource_disk_when_unpartitioned(tmp_path):
    root = str(tmp_path)
    mknod(root, "/dev/sdb", SDB)
    sysfs(root, "sdb", SDB)
    os.makedirs(os.path.join(root, "dev/disk/azure"))
    os.symlink("../../sdb", os.path.join(root, "dev/disk/azure/resource"))
    assert L.choose_device(L.Disks(root))[0] == "/dev/sdb"


def test_nvme_temp_disk_by_model(tmp_path):
    root = str(tmp_path)
    mknod(root, "/dev/nvme0n1", NVME0)
    mknod(root, "/dev/nvme1n1", NVME1)
    sysfs(root, "nvme0n1", NVME0, model="Microsoft NVMe Direct Disk v2")  # not the temp-disk model
    sysfs(root, "nvme1n1", NVME1, model=L.AZURE_NVME_MODEL)
    assert L.choose_device(L.Disks(root))[0] == "/dev/nvme1n1"


def test_nothing_found_lists_what_was_looked_at(tmp_path):
    with pytest.raises(L.SsdError) as err:
        L.choose_device(L.Disks(str(tmp_path)))
    msg = str(err.value)
    assert "/dev/disk/azure/resource" in msg and "Microsoft NVMe Direct Disk" in msg and "local_ssd_device" in msg


def test_configured_device_must_be_a_block_device(azure):
    assert L.choose_device(L.Disks(azure), "/dev/sdb")[0] == "/dev/sdb"
    with pytest.raises(L.SsdError, match="local_ssd_device: /dev/sdz is not a block device"):
        L.choose_device(L.Disks(azure), "/dev/sdz")


# ---------------------------------------------------------------------- in use

def test_os_disk_is_refused(azure):
    with pytest.raises(L.SsdError, match="/dev/sda is .on. the OS disk"):
        L.check_not_in_use(L.Disks(azure), "/dev/sda", "/mnt/local-ssd")
    with pytest.raises(L.SsdError, match="OS disk"):
        L.check_not_in_use(L.Disks(azure), "/dev/sda1", "/mnt/local-ssd")


def test_device_named_differently_in_a_container_is_found_by_number(tmp_path):
    # inside a lab node /dev/sdb is the host's loop5 (7:5): sysfs knows it only as loop5
    root = str(tmp_path)
    mknod(root, "/dev/sdb", (7, 5))
    sysfs(root, "loop5", (7, 5))
    mountinfo(root, [((0, 50), "/", "overlay"), ((7, 5), "/srv/x", "/dev/sdb")])
    with pytest.raises(L.SsdError, match="mounted at /srv/x"):
        L.check_not_in_use(L.Disks(root), "/dev/sdb", "/mnt/local-ssd")


def test_other_partition_of_the_disk_mounted_is_refused(tmp_path):
    # sdb1 is the one asked for; sdb2, on the same disk, holds a filesystem mounted elsewhere: formatting would take it
    root = str(tmp_path)
    for dev, num in (("/dev/sda", SDA), ("/dev/sda1", SDA1), ("/dev/sdb", SDB), ("/dev/sdb1", SDB1),
                     ("/dev/sdb2", (8, 18))):
        mknod(root, dev, num)
    sysfs(root, "sda", SDA, ["sda1"])
    sysfs(root, "sdb", SDB, ["sdb1", "sdb2"])
    mountinfo(root, [(SDA1, "/", "/dev/sda1"), ((8, 18), "/srv/other", "/dev/sdb2")])
    for asked in ("/dev/sdb1", "/dev/sdb"):
        with pytest.raises(L.SsdError, match=r"%s \(or another partition of its disk\) holds a filesystem mounted at "
                                             r"/srv/other" % asked):
            L.check_not_in_use(L.Disks(root), asked, "/mnt/local-ssd")


def test_ours_mounted_at_our_mount_point_is_fine(azure):
    mountinfo(azure, [(SDA1, "/", "/dev/sda1"), (SDB1, "/mnt/local-ssd", "/dev/sdb1")])
    L.check_not_in_use(L.Disks(azure), "/dev/sdb1", "/mnt/local-ssd")


def test_disk_mounted_elsewhere_is_refused_but_ours_and_agents_are_fine(azure):
    disks = L.Disks(azure)
    mountinfo(azure, [(SDA1, "/", "/dev/sda1"), (SDB1, "/srv/data", "/dev/sdb1")])
    with pytest.raises(L.SsdError, match="mounted at /srv/data"):
        L.check_not_in_use(disks, "/dev/sdb1", "/mnt/local-ssd")
    for mp in ("/mnt/local-ssd", "/mnt", "/mnt/resource"):
        mountinfo(azure, [(SDA1, "/", "/dev/sda1"), (SDB1, mp, "/dev/sdb1")])
        L.check_not_in_use(disks, "/dev/sdb1", "/mnt/local-ssd")
        assert disks.mounted_at("/dev/sdb1") == [mp]


def test_consumer_bind_mounts_inside_the_ssd_are_not_elsewhere(azure):
    # dockerd bind-mounts its data-root onto itself: the second run of local_ssd must not refuse the disk.
    disks = L.Disks(azure)
    mountinfo(azure, [(SDA1, "/", "/dev/sda1"), (SDB1, "/mnt/local-ssd", "/dev/sdb1"),
                      (SDB1, "/mnt/local-ssd/docker", "/dev/sdb1")])
    L.check_not_in_use(disks, "/dev/sdb1", "/mnt/local-ssd")
    assert disks.mounted_at("/dev/sdb1") == ["/mnt/local-ssd"]
    # A mount outside the SSD's tree is still refused, with a bind inside or not.
    mountinfo(azure, [(SDA1, "/", "/dev/sda1"), (SDB1, "/mnt/local-ssd", "/dev/sdb1"),
                      (SDB1, "/mnt/local-ssd/docker", "/dev/sdb1"), (SDB1, "/srv/data", "/dev/sdb1")])
    with pytest.raises(L.SsdError, match="mounted at /srv/data$|mounted at /srv/data;"):
        L.check_not_in_use(disks, "/dev/sdb1", "/mnt/local-ssd")


# ---------------------------------------------------------------------- safe-format verdicts

def blkid_answer(dev, **fields):
    out = "DEVNAME=%s\n" % dev + "".join("%s=%s\n" % kv for kv in fields.items())
    return {("blkid", "-p", "-o", "export", dev): (0, out, "")}


def test_blank_is_safe(azure):
    v = L.verdict(L.Disks(azure, FakeRunner()), "/dev/sdb1", "kubescale-ssd", "ext4")
    assert v["verdict"] == "blank"


def test_ntfs_with_only_the_readme_is_safe(azure):
    answers = blkid_answer("/dev/sdb1", TYPE="ntfs", LABEL="Temporary\\ Storage")
    answers[("ntfsls", "-f", "/dev/sdb1")] = (0, "DATALOSS_WARNING_README.txt\nSystem Volume Information\n", "")
    v = L.verdict(L.Disks(azure, FakeRunner(answers)), "/dev/sdb1", "kubescale-ssd", "ext4")
    assert v["verdict"] == "ntfs-readme-only" and v["found_label"] == "Temporary Storage"


def test_ntfs_with_user_files_is_foreign(azure):
    answers = blkid_answer("/dev/sdb1", TYPE="ntfs")
    answers[("ntfsls", "-f", "/dev/sdb1")] = (0, "DATALOSS_WARNING_README.txt\npagefile.sys\nbackup.tar\n", "")
    v = L.verdict(L.Disks(azure, FakeRunner(answers)), "/dev/sdb1", "kubescale-ssd", "ext4")
    assert v["verdict"] == "foreign" and "backup.tar" in v["detail"] and "2 file(s)" in v["detail"]


def test_our_label_is_ours_and_other_fstype_needs_force(azure):
    ours = blkid_answer("/dev/sdb1", TYPE="ext4", LABEL="kubescale-ssd")
    assert L.verdict(L.Disks(azure, FakeRunner(ours)), "/dev/sdb1", "kubescale-ssd", "ext4")["verdict"] == "ours"
    v = L.verdict(L.Disks(azure, FakeRunner(ours)), "/dev/sdb1", "kubescale-ssd", "xfs")
    assert v["verdict"] == "foreign" and "local_ssd_force_format" in v["detail"]


@pytest.mark.parametrize("fields,detail", [
    ({"TYPE": "ext4", "LABEL": "data"}, "ext4 labelled data"),
    ({"PTTYPE": "gpt"}, "partition table gpt"),
    ({"TYPE": "LVM2_member"}, "LVM2_member"),
])
def test_anything_else_is_foreign(azure, fields, detail):
    v = L.verdict(L.Disks(azure, FakeRunner(blkid_answer("/dev/sdb1", **fields))), "/dev/sdb1", "kubescale-ssd", "ext4")
    assert v["verdict"] == "foreign" and v["detail"] == detail


def test_blkid_error_is_not_taken_for_blank(azure):
    runner = FakeRunner({("blkid", "-p", "-o", "export", "/dev/sdb1"): (4, "", "permission denied")})
    with pytest.raises(L.SsdError, match="cannot probe"):
        L.verdict(L.Disks(azure, runner), "/dev/sdb1", "kubescale-ssd", "ext4")


# ---------------------------------------------------------------------- config and boot

GOOD = {"fstype": "ext4", "label": "kubescale-ssd", "mount": "/mnt/local-ssd", "dirs": [{"path": "etcd"}]}


@pytest.mark.parametrize("change,message", [
    ({"fstype": "btrfs"}, "local_ssd_fstype"),
    ({"label": "has space"}, "local_ssd_label"),
    ({"fstype": "xfs", "label": "thirteen-char"}, "local_ssd_label"),
    ({"mount": "mnt/ssd"}, "local_ssd_mount"),
    ({"mount": "/mnt/../etc"}, "local_ssd_mount"),
    ({"mount": "/"}, "local_ssd_mount"),
    ({"dirs": [{"path": "../etc"}]}, r"local_ssd_dirs\[0\].path"),
    ({"dirs": [{"path": "/var/lib/etcd"}]}, r"local_ssd_dirs\[0\].path"),
])
def test_bad_config(change, message):
    cfg = dict(GOOD)
    cfg.update(change)
    with pytest.raises(L.SsdError, match=message):
        L.validate_config(cfg)


def test_boot_formats_blank_disk_mounts_and_marks(azure, tmp_path):
    runner = FakeRunner({("mkfs.ext4",) + tuple(L.mkfs_argv("ext4", "kubescale-ssd", "/dev/sdb1")[1:]): (0, "", ""),
                         ("mount", "-t", "ext4", "-o", "noatime", "/dev/sdb1", str(tmp_path / "m")): (0, "", "")})
    cfg = dict(GOOD, mount=str(tmp_path / "m"), marker=str(tmp_path / "var/lib/kubescale/local-ssd.wiped"), dirs=[])
    L.boot(cfg, L.Disks(azure, runner), lambda msg: None, wait_seconds=0)
    assert runner.calls[1][0] == "mkfs.ext4" and runner.calls[2][0] == "mount"
    with open(cfg["marker"]) as f:
        marker = json.load(f)
    assert marker["found"] == "blank" and marker["by"] == "boot" and marker["device"] == "/dev/sdb1"


def test_boot_never_formats_foreign_data(azure, tmp_path):
    runner = FakeRunner(blkid_answer("/dev/sdb1", TYPE="ext4", LABEL="data"))
    cfg = dict(GOOD, mount=str(tmp_path / "m"), marker=str(tmp_path / "marker"))
    with pytest.raises(L.SsdError, match="not formatting"):
        L.boot(cfg, L.Disks(azure, runner), lambda msg: None, wait_seconds=0)
    assert [c[0] for c in runner.calls] == ["blkid"]
    assert not os.path.exists(cfg["marker"])


def test_boot_mounts_our_disk_without_formatting(azure, tmp_path):
    answers = blkid_answer("/dev/sdb1", TYPE="ext4", LABEL="kubescale-ssd")
    answers[("mount", "-t", "ext4", "-o", "noatime", "/dev/sdb1", str(tmp_path / "m"))] = (0, "", "")
    runner = FakeRunner(answers)
    cfg = dict(GOOD, mount=str(tmp_path / "m"), marker=str(tmp_path / "marker"), dirs=[])
    L.boot(cfg, L.Disks(azure, runner), lambda msg: None, wait_seconds=0)
    assert [c[0] for c in runner.calls] == ["blkid", "mount"]
    assert not os.path.exists(cfg["marker"])


XFS_INFO = """meta-data=/dev/sdb1              isize=512    agcount=4, agsize=1966080 blks
         =                       sectsz=4096  attr=2, projid32bit=1
         =                       crc=1        finobt=1, sparse=1, rmapbt=0
data     =                       bsize=4096   blocks=7864320, imaxpct=25
naming   =version 2              bsize=4096   ascii-ci=0, ftype=%d
log      =internal log           bsize=4096   blocks=3840, version=2
realtime =none                   extsz=4096   blocks=0, rtextents=0
"""


def test_xfs_ftype_1_has_no_problem_and_asks_xfs_info_at_the_mount():
    runner = FakeRunner({("xfs_info", "/mnt/local-ssd"): (0, XFS_INFO % 1, "")})
    assert L.xfs_ftype_problem(runner, "/mnt/local-ssd") == ""
    assert runner.calls == [["xfs_info", "/mnt/local-ssd"]]


@pytest.mark.parametrize("answer, message", [
    ((0, XFS_INFO % 0, ""), "the xfs filesystem at /mnt/local-ssd has no ftype=1, so overlay2 cannot use it (no d_type)"),
    ((1, "", "/mnt/local-ssd: is not a mounted XFS filesystem\n"),
     "xfs_info /mnt/local-ssd failed (rc 1): /mnt/local-ssd: is not a mounted XFS filesystem"),
])
def test_xfs_without_ftype_or_unreadable_is_a_problem(answer, message):
    runner = FakeRunner({("xfs_info", "/mnt/local-ssd"): answer})
    assert L.xfs_ftype_problem(runner, "/mnt/local-ssd") == message
