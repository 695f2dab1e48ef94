"""Against the lab's external etcd hosts (lab/kubeadm.py, kubeadm's "HA etcd cluster" guide: three static pod members
under /etc/kubernetes/manifests made by `kubeadm init phase etcd local --config /etc/kubernetes/kubeadmcfg.yaml`, run by
the lab's stand-in for the kubelet, TLS with kubeadm's PKI, 300 keys, data on the OS disk at /var/lib/etcd), after
`make site` moved it (--check predicting it, reads polled, second run changing nothing): each member runs from its SSD
in the shape kubeadm renders etcd.local.dataDir (--data-dir, the data volume and its mount), and its host's kubeadm
configuration says the same; a failed move restarts the member on its old directory; a manifest an interrupted run held
aside is put back; a new quota restarts one member; snapshots use kubeadm's healthcheck client certificate; a member
whose SSD was wiped rejoins. The tests run in order.
"""

import hashlib
import os
import re
import subprocess
import time

import pytest
import yaml
from labnode import lab_ip
from test_etcd import Poller, node, playbook, recap

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEMBERS = ["etcd-kubeadm-1", "etcd-kubeadm-2", "etcd-kubeadm-3"]
KEYS = 300
SSD_DIR = "/mnt/local-ssd/etcd"
MANIFEST = "/etc/kubernetes/manifests/etcd.yaml"
KUBEADMCFG = "/etc/kubernetes/kubeadmcfg.yaml"
HELD = "/etc/kubernetes/kubescale-held/etcd.yaml"
PKI = "/etc/kubernetes/pki/etcd"
TLS = ["--cacert=%s/ca.crt" % PKI, "--cert=%s/healthcheck-client.crt" % PKI, "--key=%s/healthcheck-client.key" % PKI]
ROLE = "tests/integration/etcd_role.yml"

pytestmark = pytest.mark.usefixtures("lab")


def endpoints():
    return ",".join("https://%s:2379" % lab_ip(m) for m in MEMBERS)


def etcdctl(via, *args, check=True):
    return node(via, "etcdctl", "--endpoints=" + endpoints(), *TLS, "--command-timeout=5s", *args, check=check)


def own_endpoint(member):
    """The member's own client URL (the guide's listen-client-urls: its address only)."""
    return "https://%s:2379" % lab_ip(member)


def keys_on(member):
    """The test keys `member` holds itself (serializable read against its own endpoint only)."""
    out = node(member, "etcdctl", "--endpoints=" + own_endpoint(member), *TLS, "get", "--consistency=s", "--prefix",
               "/kubescale-test/", check=False).stdout.splitlines()
    return dict(zip(out[0::2], out[1::2]))


def kubeadmcfg(member):
    """etcd.local of the member's host's own kubeadm configuration: (dataDir, extraArgs as a dict)."""
    docs = list(yaml.safe_load_all(node(member, "cat", KUBEADMCFG).stdout))
    local = [d for d in docs if d.get("kind") == "ClusterConfiguration"][0]["etcd"]["local"]
    return local.get("dataDir"), dict((a["name"], a["value"]) for a in local.get("extraArgs") or [])


def pod(member):
    """The etcd container's flags and the data volume's host path, from the manifest the kubelet runs."""
    manifest = yaml.safe_load(node(member, "cat", MANIFEST).stdout)
    flags = dict(a[2:].split("=", 1) for a in manifest["spec"]["containers"][0]["command"] if a.startswith("--"))
    volumes = {v["name"]: v["hostPath"]["path"] for v in manifest["spec"]["volumes"]}
    return flags, volumes["etcd-data"]


def running(member):
    """Whether the member's etcd process runs (the kubelet started it)."""
    return node(member, "pgrep", "-x", "etcd", check=False).returncode == 0


def fingerprint(member):
    out = node(member, "sh", "-c", "cat %s %s 2>/dev/null; ls -la --time-style=+ /var/lib /mnt/local-ssd %s "
               "/etc/kubernetes/manifests /etc/kubernetes/kubescale-held 2>/dev/null; pgrep -x etcd"
               % (MANIFEST, HELD, SSD_DIR), check=False).stdout
    return hashlib.sha256((out + etcdctl(member, "member", "list").stdout).encode()).hexdigest()


def poller(via):
    """test_etcd's Poller, reading this cluster over TLS."""
    return Poller(via, etcdctl)


@pytest.fixture(scope="module")
def cluster():
    """The lab's kubeadm etcd on the SSDs (converged here when `make site` did not run before)."""
    if any(pod(m)[1] != SSD_DIR for m in MEMBERS):
        proc = playbook("playbooks/etcd.yml", "-l", "etcd_kubeadm")
        assert proc.returncode == 0, proc.stdout[-3000:]
    return MEMBERS


def test_every_member_runs_from_its_ssd_with_every_key(cluster):
    for m in MEMBERS:
        flags, data = pod(m)
        assert data == SSD_DIR
        assert flags["data-dir"] == SSD_DIR  # kubeadm's etcd.local.dataDir shape: the flag, the volume, its mount
        assert flags["quota-backend-bytes"] == str(8 * 1024 ** 3)
        assert node(m, "findmnt", "-n", "-o", "SOURCE", "-T", SSD_DIR).stdout.strip() == "/dev/sdb"
        # what the etcd process sees at its data dir (in its own root) is the SSD directory
        mnt = node(m, "sh", "-c", "nsenter -t $(pgrep -x etcd) -m -r findmnt -n -o SOURCE %s" % SSD_DIR).stdout
        assert mnt.strip() == "/dev/sdb[/etcd]", mnt
        # the guide's upgrade (kubeadm init phase etcd local --config) renders the same
        data_dir, extra = kubeadmcfg(m)
        assert data_dir == SSD_DIR and extra["quota-backend-bytes"] == str(8 * 1024 ** 3)
        # the backup, on the disk the member was on: /var/lib/etcd is that disk's mount point (the lab's emulated
        # network disk), so its member directory was renamed in it
        assert node(m, "mountpoint", "-q", "/var/lib/etcd", check=False).returncode == 0
        assert node(m, "sh", "-c", "ls -d /var/lib/etcd/member.pre-ssd-*").stdout.strip()
        assert node(m, "test", "-e", "/var/lib/etcd/member", check=False).returncode != 0
        # the move stopped and started the member; it never exited by itself (its mounts live in its own root, so
        # renaming the node's /var/lib/etcd/member to the backup changed nothing for it)
        journal = node(m, "journalctl", "-u", "kubelet", "--no-pager", "-o", "cat").stdout
        assert "etcd.yaml: exited with" not in journal
        assert node(m, "ls", "-A", "/etc/kubernetes/kubescale-held").stdout.strip() == ""
        assert len(keys_on(m)) == KEYS, m
    assert etcdctl(MEMBERS[0], "endpoint", "health").returncode == 0


def test_bad_input_is_refused_and_changes_nothing(cluster):
    before = fingerprint("etcd-kubeadm-1")
    cases = [
        # the Debian package's etcd.service is installed (disabled) on these nodes, but no member runs from it
        ("etcd-kubeadm-1", "etcd_local_disk_mode=systemd", "etcd.service is not running and /var/lib/etcd/default holds no member data"),
        ("etcd-kubeadm-1", "etcd_local_disk_manifest=/etc/kubernetes/manifests/etcd-missing.yaml "
         "etcd_local_disk_mode=static_pod", "etcd_local_disk_mode static_pod: no etcd member to move"),
        ("etcd-kubeadm-1", "etcd_local_disk_quota_backend_bytes=8X", "etcd_local_disk_quota_backend_bytes: '8X'"),
    ]
    for host, extra, message in cases:
        proc = playbook(ROLE, "-l", host, "-e", extra)
        assert proc.returncode != 0, extra
        assert message in proc.stdout and "Nothing was changed" in proc.stdout, (extra, proc.stdout[-2500:])
    assert fingerprint("etcd-kubeadm-1") == before
    # a systemd member is not mistaken for a static pod
    proc = playbook(ROLE, "-l", "etcd-1", "-e", "etcd_local_disk_mode=static_pod")
    assert proc.returncode != 0 and "no etcd member to move" in proc.stdout, proc.stdout[-2500:]


def test_failed_move_restarts_the_member_on_its_old_directory(cluster):
    # a target too small for etcd's preallocated WAL (64 MiB) but big enough for the latency probe (46 MB)
    m = "etcd-kubeadm-1"
    node(m, "sh", "-c", "mkdir -p /mnt/tiny && (mountpoint -q /mnt/tiny || mount -t tmpfs -o size=56m tmpfs /mnt/tiny)")
    try:
        flags_before = pod(m)[0]
        with poller("etcd-kubeadm-3") as poll:
            proc = playbook("playbooks/etcd.yml", "-l", m, "-e", "etcd_local_disk_data_dir=/mnt/tiny/etcd",
                            "-e", "etcd_local_disk_quota_backend_bytes=4GiB")
        assert proc.returncode != 0
        assert "moving to /mnt/tiny/etcd failed at 'Copy the data directory" in proc.stdout, proc.stdout[-3000:]
        assert "runs again on %s" % SSD_DIR in proc.stdout
        assert re.search(r"%s\s+: .*rescued=1" % m, proc.stdout)
        flags, data = pod(m)
        assert data == SSD_DIR and flags == flags_before  # the quota flag as it was, too
        # its host's kubeadm configuration put back too (the failed move had written /mnt/tiny/etcd and 4 GiB there)
        data_dir, extra = kubeadmcfg(m)
        assert data_dir == SSD_DIR and extra["quota-backend-bytes"] == str(8 * 1024 ** 3)
        assert running(m) and len(keys_on(m)) == KEYS
        assert node(m, "ls", "-A", "/etc/kubernetes/kubescale-held").stdout.strip() == ""
        assert poll.held(), (poll.failures, poll.retried)
    finally:
        node(m, "sh", "-c", "umount /mnt/tiny; rmdir /mnt/tiny", check=False)


def test_a_disk_slower_than_the_ssd_is_refused_at_the_production_thresholds(cluster):
    """The lab runs etcd_local_disk's gate at its defaults (its etcd SSDs are in memory, their /var/lib/etcd the
    emulated network disk, lab/disks.py): a move from the SSD onto another slowdisk (2 ms before every fdatasync: the
    seed's network disk) is refused, slower than the SSD the member is on, and nothing changes."""
    m = "etcd-kubeadm-2"
    node(m, "mkdir", "-p", "/mnt/netdisk", "/var/lib/netdisk-backing")
    node(m, "systemd-run", "--unit=kubescale-test-slowdisk", "--collect", "/opt/kubescale-k8s/current/bin/slowdisk",
         "-delay", "2ms", "/var/lib/netdisk-backing", "/mnt/netdisk")
    try:
        deadline = time.time() + 60
        while node(m, "mountpoint", "-q", "/mnt/netdisk", check=False).returncode != 0:
            assert time.time() < deadline, "slowdisk did not mount /mnt/netdisk"
            time.sleep(1)
        before = fingerprint(m)
        proc = playbook("playbooks/etcd.yml", "-l", m, "-e", "etcd_local_disk_data_dir=/mnt/netdisk/etcd")
        assert proc.returncode != 0
        said = " ".join(proc.stdout.split())
        found = re.search(r"etcd member %s stays on %s: fdatasync p99 on /mnt/netdisk is ([0-9.]+) ms against "
                          r"([0-9.]+) ms now \(etcd_local_disk_max_slowdown 1.0, etcd_local_disk_max_p99_ms 10\)"
                          % (m, SSD_DIR), said)
        assert found, said[-3000:]
        netdisk, ssd = float(found.group(1)), float(found.group(2))
        # slowdisk sleeps 2 ms before every fdatasync; the member's SSD, in memory, passes the production gate itself
        # (p99 under etcd_local_disk_max_p99_ms), so the move is refused for being slower than the disk it is on
        assert netdisk >= 2 and ssd < 10 and ssd < netdisk, (netdisk, ssd)
        assert fingerprint(m) == before and running(m) and len(keys_on(m)) == KEYS
    finally:
        node(m, "systemctl", "stop", "kubescale-test-slowdisk", check=False)
        node(m, "sh", "-c", "rm -rf /mnt/netdisk /var/lib/netdisk-backing", check=False)


def test_a_manifest_an_interrupted_run_held_aside_is_put_back(cluster):
    # what a run killed between "Stop the member" and "Start the member on the SSD" leaves behind
    m = "etcd-kubeadm-3"
    node(m, "sh", "-c", "mkdir -p -m 0700 %s && mv %s %s" % (os.path.dirname(HELD), MANIFEST, HELD))
    deadline = time.time() + 60
    while running(m) and time.time() < deadline:
        time.sleep(0.5)
    assert not running(m)
    proc = playbook(ROLE, "-l", m)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert re.search(r"changed: \[%s\]" % m,
                     proc.stdout.split("Start a static pod member an interrupted run left held aside")[1])
    assert running(m) and len(keys_on(m)) == KEYS
    assert node(m, "test", "-e", HELD, check=False).returncode != 0


def test_a_new_quota_restarts_one_member(cluster):
    m = "etcd-kubeadm-1"
    with poller("etcd-kubeadm-3") as poll:
        proc = playbook(ROLE, "-l", m, "-e", "etcd_local_disk_quota_backend_bytes=4GiB")
    assert proc.returncode == 0, proc.stdout[-3000:]
    # held aside and put back (member_static_pod.yml), the quota flag set in between
    assert re.search(r"changed: \[%s\]" % m, proc.stdout.split("Start the member (the kubelet runs the manifest again)]")[1])
    assert pod(m)[0]["quota-backend-bytes"] == str(4 * 1024 ** 3)
    assert kubeadmcfg(m)[1]["quota-backend-bytes"] == str(4 * 1024 ** 3)
    assert "bytes of a 4294967296-byte quota" in proc.stdout  # the db size against the new quota, reported
    assert len(keys_on(m)) == KEYS and poll.held(), (poll.failures, poll.retried)
    back = playbook(ROLE, "-l", m)
    assert back.returncode == 0 and pod(m)[0]["quota-backend-bytes"] == str(8 * 1024 ** 3), back.stdout[-3000:]
    assert kubeadmcfg(m)[1]["quota-backend-bytes"] == str(8 * 1024 ** 3)


def test_snapshots_through_kubeadms_healthcheck_certificate(cluster):
    m = "etcd-kubeadm-3"
    on = playbook(ROLE, "-l", m, "-e", "etcd_local_disk_snapshot=true")
    assert on.returncode == 0, on.stdout[-3000:]
    unit = node(m, "cat", "/etc/systemd/system/kubescale-etcd-snapshot.service").stdout
    assert "After=kubelet.service" in unit and "--cert=%s/healthcheck-client.crt" % PKI in unit, unit
    before = set(node(m, "ls", "/var/lib/kubescale/etcd-snapshots/").stdout.split())  # kept from earlier runs
    node(m, "systemctl", "start", "kubescale-etcd-snapshot.service")
    files = sorted(set(node(m, "ls", "/var/lib/kubescale/etcd-snapshots/").stdout.split()) - before)
    assert len(files) == 1, files
    status = node(m, "etcdctl", "snapshot", "status", "/var/lib/kubescale/etcd-snapshots/" + files[0], "-w", "json").stdout
    assert int(re.search(r'"totalKey":(\d+)', status).group(1)) >= KEYS
    off = playbook(ROLE, "-l", m)
    assert off.returncode == 0 and node(m, "test", "-e", "/etc/systemd/system/kubescale-etcd-snapshot.timer",
                                        check=False).returncode != 0, off.stdout[-3000:]


def test_a_wiped_member_rejoins_and_resyncs(cluster):
    m = "etcd-kubeadm-2"
    old_id = [line for line in etcdctl("etcd-kubeadm-1", "member", "list").stdout.splitlines() if ", %s, " % m in line]
    subprocess.run(["/usr/bin/python3", "-m", "lab", "redeploy", m, "--disk", "blank"], cwd=REPO,
                   check=True, capture_output=True)
    assert len(keys_on(m)) == 0  # the data went with the SSD
    with poller("etcd-kubeadm-1") as poll:
        proc = playbook("playbooks/etcd.yml", "-l", m)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert re.search(r"changed: \[%s\]" % m, proc.stdout.split("Re-add the member through a healthy peer")[1])
    assert len(keys_on(m)) == KEYS
    flags, data = pod(m)
    assert data == SSD_DIR and flags["initial-cluster-state"] == "existing"
    assert kubeadmcfg(m)[1]["initial-cluster-state"] == "existing"  # the guide's upgrade renders the same
    new = [line for line in etcdctl("etcd-kubeadm-1", "member", "list").stdout.splitlines() if ", %s, " % m in line]
    assert new and new[0].split(",")[0] != old_id[0].split(",")[0] and "started" in new[0]
    assert poll.held(), (poll.failures, poll.retried)
    again = playbook("playbooks/etcd.yml", "-l", m)
    assert again.returncode == 0 and recap(again, m)["changed"] == 0, again.stdout[-3000:]
