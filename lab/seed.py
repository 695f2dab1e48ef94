"""What a distro install and kubeadm leave before the collection runs: the main etcd cluster on the OS disk, the
kubeadm etcd cluster as static pods with its PKI, and the lab's CA."""

import os
import time

from common import PKI, PREFIX, REPO, LabError, docker, install_standin, issue_cert, log, run
from pki import ensure_pki

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
