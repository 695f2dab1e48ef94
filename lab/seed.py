"""What a distro install leaves before the collection runs: the main etcd cluster (Debian's etcd package under
systemd, its environment file) on the OS disk. kubeadm's etcd members are lab/kubeadm.py's."""

import os
import time

from .common import PREFIX, REPO, LabError, docker, log, run

# The distro package's layout (lab/fixtures/etcd.env.tmpl, str.format fields name, ip, cluster).
with open(os.path.join(REPO, "lab", "fixtures", "etcd.env.tmpl")) as _f:
    ETCD_ENV = _f.read()


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
