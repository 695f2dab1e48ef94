"""Against the lab, after `make site` (tests/integration/site_twice.sh) moved the main etcd (Debian's etcd 3.4, three
members, formed by the lab on the OS disk with 300 keys) onto the local SSDs - with --check predicting it task for
task, quorum polled through the whole run and a second run changing nothing: every member is on its SSD with every
key; bad input changes nothing; a failed move restarts the member where it was; a member whose SSD was wiped rejoins;
a rejoin that would lose quorum is refused. The tests run in order.
"""

import hashlib
import os
import re
import subprocess
import threading
import time

import pytest
import yaml
from labnode import node

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"))
MEMBERS = ["etcd-1", "etcd-2", "etcd-3"]
KEYS = 300
SSD_DIR = "/mnt/local-ssd/etcd"
# What etcdctl prints when its read reached a TLS member while that member was shutting down (Poller.run)
STOPPING = "transport: missing content-type field"

pytestmark = pytest.mark.usefixtures("lab")


def endpoints():
    with open(HOSTS) as f:
        inv = yaml.safe_load(f)
    hosts = inv["all"]["children"]["etcd"]["hosts"]
    return ",".join("http://%s:2379" % hosts[m]["lab_ip"] for m in MEMBERS)


def etcdctl(via, *args, check=True):
    return node(via, "etcdctl", "--endpoints=" + endpoints(), "--command-timeout=5s", *args, check=check)


def keys_on(member):
    """The test keys member `member` holds itself (serializable read against its own endpoint only)."""
    out = node(member, "etcdctl", "--endpoints=http://127.0.0.1:2379", "get", "--consistency=s", "--prefix",
               "/kubescale-test/", check=False).stdout.splitlines()
    return dict(zip(out[0::2], out[1::2]))


def playbook(*args):
    return subprocess.run(["ansible-playbook"] + list(args), cwd=REPO, env=ENV, capture_output=True, text=True,
                          check=False)


def recap(proc, host):
    match = re.search(r"^%s\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=0\s+failed=(\d+)" % re.escape(host),
                      proc.stdout, re.M)
    assert match, proc.stdout[-3000:]
    return dict(ok=int(match.group(1)), changed=int(match.group(2)), failed=int(match.group(3)))


def data_dir(member):
    env = node(member, "cat", "/etc/default/etcd").stdout
    return re.search(r'^ETCD_DATA_DIR="?([^"\n]*)"?$', env, re.M).group(1)


def fingerprint(member):
    """What a refused run must leave as it was: the member's config, its data directories, the member list."""
    out = node(member, "sh", "-c", "cat /etc/default/etcd /etc/ansible/facts.d/kubescale_etcd_local_disk.fact "
               "2>/dev/null; ls -la --time-style=+ /var/lib/etcd /mnt /mnt/local-ssd /dev/shm %s; "
               "systemctl is-active etcd" % SSD_DIR, check=False).stdout
    members = etcdctl(member, "member", "list").stdout
    return hashlib.sha256((out + members).encode()).hexdigest()


class Poller(threading.Thread):
    """Linearizable reads through every endpoint, a few per second: each needs a quorum to answer.

    `ctl` runs etcdctl against the cluster under test (this module's main etcd by default)."""

    def __init__(self, via, ctl=None):
        super().__init__(daemon=True)
        self.via = via
        self.ctl = ctl or etcdctl
        self.stop = threading.Event()
        self.ok = 0
        self.failures = []
        self.retried = []  # reads that reached a stopping member and were answered when asked again

    def read(self):
        proc = self.ctl(self.via, "get", "/kubescale-test/1", check=False)
        return proc.returncode == 0 and "value-1" in proc.stdout, proc.stderr.strip()[-200:]

    def run(self):
        while not self.stop.is_set():
            ok, err = self.read()
            if not ok and STOPPING in err:
                # The read reached a member in the instant it stops: with TLS, etcd serves gRPC through net/http, and
                # grpc-go's ServeHTTP closes a request that arrives once the server has stopped without writing a
                # status (server.go, addConn), so the answer is an empty 200. etcd's client retries only Unavailable
                # and hands this to its caller, which asks again: here once, and counted.
                self.retried.append((time.strftime("%H:%M:%S"), err))
                time.sleep(0.2)
                ok, err = self.read()
            if ok:
                self.ok += 1
            else:
                self.failures.append((time.strftime("%H:%M:%S"), err))
            time.sleep(0.3)

    def held(self, stops=1):
        """The quorum answered every read; no more than one read per member stop needed a second ask."""
        return not self.failures and self.ok > 0 and len(self.retried) <= stops

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.join()


@pytest.fixture(scope="module")
def cluster():
    """The lab's cluster on the SSDs (converged here when `make site` did not run before)."""
    if any(data_dir(m) != SSD_DIR for m in MEMBERS):
        proc = playbook("playbooks/etcd.yml")
        assert proc.returncode == 0, proc.stdout[-3000:]
    return MEMBERS


def test_every_member_is_on_its_ssd_with_every_key(cluster):
    for m in MEMBERS:
        assert data_dir(m) == SSD_DIR
        assert node(m, "findmnt", "-n", "-o", "SOURCE", "-T", SSD_DIR).stdout.strip() == "/dev/sdb"
        assert node(m, "sh", "-c", "ls -d /var/lib/etcd/default.pre-ssd-*").stdout.strip()  # the backup
        assert 'ETCD_QUOTA_BACKEND_BYTES="8589934592"' in node(m, "cat", "/etc/default/etcd").stdout
        assert len(keys_on(m)) == KEYS, m
    status = etcdctl("etcd-1", "endpoint", "status", "-w", "json").stdout
    assert status.count('"Endpoint"') == 3


def test_bad_input_is_refused_and_changes_nothing(cluster):
    before = fingerprint("etcd-1")
    cases = [  # (extra vars, the message, whether our validation (not the argument spec) answers)
        ("etcd_local_disk_quota_backend_bytes=8X", "etcd_local_disk_quota_backend_bytes: '8X' is not a size", True),
        ("etcd_local_disk_quota_backend_bytes=-1", "etcd_local_disk_quota_backend_bytes: '-1' is not a size", True),
        ("etcd_local_disk_quota_backend_bytes=0", "'0' must be more than 0 bytes", True),
        ("etcd_local_disk_mode=podman", "etcd_local_disk_mode must be one of: auto, systemd, static_pod", False),
        ("etcd_local_disk_data_dir=relative/etcd", "etcd_local_disk_data_dir (relative/etcd) must be an absolute", True),
        ('{"etcd_local_disk_endpoints": ["10.0.0.1:2379"]}', "etcd_local_disk_endpoints must be a list of client URLs",
         True),
        ("etcd_local_disk_backup_keep=-1", "etcd_local_disk_backup_keep (-1) must be a whole number, 0 or more", True),
        ("etcd_local_disk_data_dir=/dev/shm/etcd etcd_local_disk_max_p99_ms=0.0001",
         "etcd member etcd-1 stays on /mnt/local-ssd/etcd: fdatasync p99", True),
        ("etcd_local_disk_data_dir=/mnt/local-ssd/etcd-copy", "/mnt/local-ssd is on the same filesystem as", True),
        ("etcd_local_disk_data_dir=/mnt/not-mounted/etcd", "/mnt/not-mounted does not exist (is the SSD mounted?",
         True),
    ]
    for extra, message, ours in cases:
        proc = playbook("tests/integration/etcd_role.yml", "-l", "etcd-1", "-e", extra)
        assert proc.returncode != 0, extra
        assert message in proc.stdout, (extra, proc.stdout[-2500:])
        assert "Nothing was changed" in proc.stdout or not ours, extra
    assert fingerprint("etcd-1") == before


def test_failed_move_restarts_the_member_on_its_old_directory(cluster):
    # From the SSD to a target too small for etcd's preallocated WAL (64 MiB) but big enough for the latency probe
    # (46 MB): the copy is refused after the member was stopped.
    node("etcd-1", "sh", "-c", "mkdir -p /mnt/tiny && (mountpoint -q /mnt/tiny || mount -t tmpfs -o size=56m tmpfs /mnt/tiny)")
    try:
        with Poller("etcd-3") as poll:
            proc = playbook("playbooks/etcd.yml", "-l", "etcd-1", "-e", "etcd_local_disk_data_dir=/mnt/tiny/etcd")
        assert proc.returncode != 0
        assert "moving to /mnt/tiny/etcd failed at 'Copy the data directory" in proc.stdout, proc.stdout[-3000:]
        assert "runs again on %s" % SSD_DIR in proc.stdout
        assert re.search(r"etcd-1\s+: .*rescued=1", proc.stdout)
        assert data_dir("etcd-1") == SSD_DIR
        assert node("etcd-1", "systemctl", "is-active", "etcd").stdout.strip() == "active"
        assert len(keys_on("etcd-1")) == KEYS
        assert poll.held(), (poll.failures, poll.retried)
    finally:
        node("etcd-1", "sh", "-c", "umount /mnt/tiny; rmdir /mnt/tiny", check=False)


def test_a_member_an_interrupted_run_left_stopped_is_started(cluster):
    # what a run killed between "Stop the member" and "Start the member on the SSD" leaves behind
    node("etcd-3", "systemctl", "stop", "etcd")
    proc = playbook("tests/integration/etcd_role.yml", "-l", "etcd-3")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert re.search(r"changed: \[etcd-3\]", proc.stdout.split("Start a member an interrupted run left stopped")[1])
    assert node("etcd-3", "systemctl", "is-active", "etcd").stdout.strip() == "active"
    assert len(keys_on("etcd-3")) == KEYS


def test_a_new_quota_restarts_the_member_only_when_the_cluster_can_spare_it(cluster):
    quota = 'ETCD_QUOTA_BACKEND_BYTES="%d"'
    node("etcd-3", "systemctl", "stop", "etcd")
    try:
        before = fingerprint("etcd-1")
        refused = playbook("tests/integration/etcd_role.yml", "-l", "etcd-1",
                           "-e", "etcd_local_disk_quota_backend_bytes=4GiB")
        assert refused.returncode != 0
        assert "its quota becomes 4294967296 bytes with a restart, and only 1 other members answer healthy" \
            in refused.stdout, refused.stdout[-3000:]
        assert fingerprint("etcd-1") == before
    finally:
        node("etcd-3", "systemctl", "start", "etcd")
    with Poller("etcd-3") as poll:
        proc = playbook("tests/integration/etcd_role.yml", "-l", "etcd-1", "-e", "etcd_local_disk_quota_backend_bytes=4GiB")
    assert proc.returncode == 0, proc.stdout[-3000:]
    # stopped and started again (member_systemd.yml), the quota set in between
    assert re.search(r"changed: \[etcd-1\]", proc.stdout.split("TASK [kubescale.tuning.etcd_local_disk : Start the member]")[1])
    assert quota % (4 * 1024 ** 3) in node("etcd-1", "cat", "/etc/default/etcd").stdout
    assert len(keys_on("etcd-1")) == KEYS and poll.held(), (poll.failures, poll.retried)
    back = playbook("tests/integration/etcd_role.yml", "-l", "etcd-1")
    assert back.returncode == 0 and quota % (8 * 1024 ** 3) in node("etcd-1", "cat", "/etc/default/etcd").stdout


def test_snapshots_to_the_os_disk_on_a_timer(cluster):
    on = playbook("tests/integration/etcd_role.yml", "-l", "etcd-1", "-e", "etcd_local_disk_snapshot=true",
                  "-e", "etcd_local_disk_snapshot_keep=2")
    assert on.returncode == 0, on.stdout[-3000:]
    assert node("etcd-1", "systemctl", "is-enabled", "kubescale-etcd-snapshot.timer").stdout.strip() == "enabled"
    for _attempt in range(3):
        node("etcd-1", "systemctl", "start", "kubescale-etcd-snapshot.service")
        time.sleep(1.1)  # one file per second (the name carries the time)
    files = node("etcd-1", "sh", "-c", "ls /var/lib/kubescale/etcd-snapshots/").stdout.split()
    assert len(files) == 2 and all(f.startswith("etcd-") and f.endswith(".db") for f in files), files
    status = node("etcd-1", "etcdctl", "snapshot", "status", "/var/lib/kubescale/etcd-snapshots/" + files[-1],
                  "-w", "json").stdout
    assert int(re.search(r'"totalKey":(\d+)', status).group(1)) >= KEYS
    off = playbook("tests/integration/etcd_role.yml", "-l", "etcd-1")
    assert off.returncode == 0, off.stdout[-3000:]
    assert node("etcd-1", "test", "-e", "/etc/systemd/system/kubescale-etcd-snapshot.timer", check=False).returncode
    assert len(node("etcd-1", "ls", "/var/lib/kubescale/etcd-snapshots/").stdout.split()) == 2  # kept
    again = playbook("tests/integration/etcd_role.yml", "-l", "etcd-1")
    assert recap(again, "etcd-1")["changed"] == 0, again.stdout[-3000:]


def test_a_wiped_member_rejoins_and_resyncs(cluster):
    old_id = [line for line in etcdctl("etcd-1", "member", "list").stdout.splitlines() if ", etcd-2, " in line]
    subprocess.run(["/usr/bin/python3", "-m", "lab", "redeploy", "etcd-2", "--disk", "blank"], cwd=REPO,
                   check=True, capture_output=True)
    assert len(keys_on("etcd-2")) == 0  # the data went with the SSD
    with Poller("etcd-1") as poll:
        proc = playbook("playbooks/etcd.yml", "-l", "etcd-2")
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert re.search(r"changed: \[etcd-2\]", proc.stdout.split("Re-add the member through a healthy peer")[1])
    assert len(keys_on("etcd-2")) == KEYS
    new = [line for line in etcdctl("etcd-1", "member", "list").stdout.splitlines() if ", etcd-2, " in line]
    assert new and new[0].split(",")[0] != old_id[0].split(",")[0]  # a new member ID
    assert "started" in new[0]
    assert poll.held(), (poll.failures, poll.retried)
    # joined with "existing", then back to "new": wiped again, it cannot start under its old ID by itself
    assert 'ETCD_INITIAL_CLUSTER_STATE="new"' in node("etcd-2", "cat", "/etc/default/etcd").stdout
    again = playbook("playbooks/etcd.yml", "-l", "etcd-2")
    assert again.returncode == 0 and recap(again, "etcd-2")["changed"] == 0, again.stdout[-3000:]


def test_existing_left_by_a_run_that_died_inside_a_rejoin_is_set_back_to_new(cluster):
    # The controller killed between "join the existing cluster" and "back to new": the member runs on its data, but at
    # the next wipe it would start under its old ID with an empty raft log. The next run reads it from the file.
    env = "/etc/default/etcd"
    node("etcd-2", "sh", "-c", "sed -i '/^ETCD_INITIAL_CLUSTER_STATE=/d' %s && echo 'ETCD_INITIAL_CLUSTER_STATE=\"existing\"' >> %s"
         % (env, env))
    assert 'ETCD_INITIAL_CLUSTER_STATE="existing"' in node("etcd-2", "cat", env).stdout
    check = playbook("playbooks/etcd.yml", "-l", "etcd-2", "--check", "--diff")
    assert check.returncode == 0 and recap(check, "etcd-2")["changed"] == 1, check.stdout[-3000:]
    assert re.search(r"changed: \[etcd-2\]", check.stdout.split("left existing]")[1].split("TASK [")[0])
    assert 'ETCD_INITIAL_CLUSTER_STATE="existing"' in node("etcd-2", "cat", env).stdout
    proc = playbook("playbooks/etcd.yml", "-l", "etcd-2")
    assert proc.returncode == 0 and recap(proc, "etcd-2")["changed"] == 1, proc.stdout[-3000:]
    assert 'ETCD_INITIAL_CLUSTER_STATE="new"' in node("etcd-2", "cat", env).stdout
    assert len(keys_on("etcd-2")) == KEYS
    again = playbook("playbooks/etcd.yml", "-l", "etcd-2")
    assert again.returncode == 0 and recap(again, "etcd-2")["changed"] == 0, again.stdout[-3000:]


def test_rejoin_is_refused_when_it_would_lose_quorum(cluster):
    node("etcd-3", "systemctl", "stop", "etcd")
    try:
        subprocess.run(["/usr/bin/python3", "-m", "lab", "redeploy", "etcd-2", "--disk", "blank"], cwd=REPO,
                       check=True, capture_output=True)
        members = etcdctl("etcd-1", "member", "list", check=False).stdout
        proc = playbook("playbooks/etcd.yml", "-l", "etcd-2")
        assert proc.returncode != 0
        assert re.search(r"member etcd-2 cannot be re-added: only \d of the other members answer healthy and the "
                         r"cluster needs 2 votes", proc.stdout), proc.stdout[-3000:]
        assert etcdctl("etcd-1", "member", "list", check=False).stdout == members
    finally:
        node("etcd-3", "systemctl", "start", "etcd")
    proc = playbook("playbooks/etcd.yml", "-l", "etcd-2")
    assert proc.returncode == 0, proc.stdout[-3000:]
    for m in MEMBERS:
        assert len(keys_on(m)) == KEYS, m
