"""The fleet audit on the main etcd (make lab-test's `etcd` stream, after test_etcd.py): a member near its quota.

etcd_local_disk gives etcd-2 alone a test quota just above its database (the database then fills 85 % of it); the
audit must be red on etcd-2 only, with the sizes, and the run must fail; the site quota is put back by the role.
"""

import math
import re
import subprocess

import pytest
from audit_lab import ENV, REPO, audit, node, red_checks, red_nodes

pytestmark = pytest.mark.usefixtures("lab")
MAIN_ETCD = "etcd:!etcd_kubeadm"


def role(*args):
    return subprocess.run(["ansible-playbook", "tests/integration/etcd_role.yml"] + list(args), cwd=REPO, env=ENV,
                          capture_output=True, text=True, check=False)


def db_size(member):
    out = node(member, "etcdctl", "--endpoints=http://127.0.0.1:2379", "endpoint", "status", "-w", "json").stdout
    return int(re.search(r'"dbSize":(\d+)', out).group(1))


def test_a_member_near_its_quota_is_red_on_that_member_only(tmp_path):
    quota = int(math.ceil(db_size("etcd-2") / 0.85))
    small = role("-l", "etcd-2", "-e", "etcd_local_disk_quota_backend_bytes=%d" % quota)
    assert small.returncode == 0, small.stdout[-3000:]
    try:
        assert 'ETCD_QUOTA_BACKEND_BYTES="%d"' % quota in node("etcd-2", "cat", "/etc/default/etcd").stdout
        proc, doc, _dir = audit(tmp_path, MAIN_ETCD)
    finally:
        back = role("-l", "etcd-2")
    assert back.returncode == 0, back.stdout[-3000:]
    assert proc.returncode != 0 and "red check(s) on 1 node(s)" in " ".join(proc.stdout.split()), proc.stdout[-3000:]
    assert red_nodes(doc) == ["etcd-2"], doc["failing"]
    checks = red_checks(doc, "etcd-2")
    assert [(c["area"], c["check"]) for c in checks] == [("etcd", "db_vs_quota")]
    assert re.match(r"database [0-9.]+ MiB of quota [0-9.]+ MiB \((8[5-9]|9[0-9]) %\) on etcd-2$", checks[0]["message"]), \
        checks[0]["message"]
    assert checks[0]["value"] >= 0.8 and checks[0]["threshold"] == 0.8
    assert set(doc["nodes"]) == {"etcd-1", "etcd-2", "etcd-3"}
    for other in ("etcd-1", "etcd-3"):
        assert doc["nodes"][other]["status"] == "green", doc["nodes"][other]
