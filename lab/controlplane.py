"""The lab's Kubernetes control plane on the kube_control_plane nodes, the way kubeadm lays it out.

kube-apiserver, kube-controller-manager and kube-scheduler run as kubeadm-shaped static pods
(lab/fixtures/*.yaml.tmpl) under the stand-in kubelet, with kubeadm's PKI under /etc/kubernetes/pki and its
kubeconfig files (admin.conf, scheduler.conf, controller-manager.conf). The binaries are built from Go modules
(lab/k8s). kube-apiserver stores its objects in the lab's kubeadm etcd cluster (TLS, client certificates), with the
client certificate that events_etcd's `apiserver` entry point checks the Events cluster with. kwok (a systemd unit on
the same node) keeps LAB_KWOK_NODES fake Nodes Ready with the capacity of the worker classes' VM sizes.

Files are placed once: a node that has its kube-apiserver manifest is left to the roles, which own the manifests and
kubeadm's configuration from then on. Binaries are refreshed whenever the build changes.
"""

import base64
import concurrent.futures
import hashlib
import json
import os
import subprocess
import tempfile
import time

from common import PKI, PREFIX, REPO, LabError, docker, install_standin, issue_cert, log, put_file, run

K8S_BUILD = os.path.join(REPO, "lab", "k8s", "build.sh")
K8S_PKI = os.path.join(PKI, "k8s")
ADMIN_CONF = os.path.join(K8S_PKI, "admin.conf")  # the controller's kubeconfig (tests, benchmarks)
SERVICE_CIDR = "10.96.0.0/12"
SERVICE_IP = "10.96.0.1"
BINARIES = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok", "kubelet-config-check"]
MANIFESTS = ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]

# The worker classes' VM sizes, as kwok's Nodes report them (allocatable = capacity: no kubelet reserves).
NODE_SIZES = {
    "kube_node_cpu": ("cpu", "Standard_D15_v2", {"cpu": "20", "memory": "140Gi", "pods": "110"}),
    "kube_node_gpu": ("gpu", "Standard_NC24", {"cpu": "24", "memory": "224Gi", "pods": "110", "nvidia.com/gpu": "4"}),
}
# kwok renews each Node's Lease every quarter of this; 2,500 Nodes at 240 s are ~42 lease writes a second.
# kube-controller-manager's grace before it marks a node NotReady is set above the renew interval to match.
KWOK_LEASE_SECONDS = 240
NODE_MONITOR_GRACE = "180s"
KWOK_STAGES = ["node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-complete", "pod-delete"]


def k8s_version():
    """The Kubernetes release lab/k8s/go.mod pins (its k8s.io/kubernetes requirement)."""
    with open(os.path.join(REPO, "lab", "k8s", "go.mod")) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "k8s.io/kubernetes" and parts[1].startswith("v"):
                return parts[1]
    raise LabError("lab/k8s/go.mod requires no k8s.io/kubernetes version")


def kwok_counts():
    """LAB_KWOK_NODES (50) fake Nodes: one in five of the GPU class (Standard_NC24), the rest Standard_D15_v2."""
    raw = os.environ.get("LAB_KWOK_NODES", "50")
    if not raw.isdigit():
        raise LabError("LAB_KWOK_NODES must be a whole number, got %r" % raw)
    total = int(raw)
    gpu = total // 5
    return {"kube_node_cpu": total - gpu, "kube_node_gpu": gpu}


def kwok_node(group, index):
    short, size, resources = NODE_SIZES[group]
    name = "kwok-%s-%04d" % (short, index)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                       "type": "kwok", "node.kubernetes.io/instance-type": size, "kubescale.io/node-class": group},
        },
        "status": {"capacity": dict(resources), "allocatable": dict(resources)},
    }


def kwok_nodes(counts):
    return [kwok_node(group, i) for group, n in sorted(counts.items()) for i in range(1, n + 1)]


# --------------------------------------------------------------------------- build

def build_binaries():
    """The control plane's binaries from lab/k8s (cached outside the checkout); their directory."""
    proc = subprocess.run(["bash", K8S_BUILD], stdout=subprocess.PIPE, text=True, check=False)
    if proc.returncode != 0:
        raise LabError("building the lab's Kubernetes control plane failed (lab/k8s/build.sh said why above); "
                       "the lab does not start without it")
    return proc.stdout.strip().splitlines()[-1]


def file_sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def install_binaries(cname, build_dir):
    """Copy the binaries to /usr/local/bin on the node where they differ (a changed build replaces them)."""
    have = run(["docker", "exec", cname, "sh", "-c", "cd /usr/local/bin && sha256sum %s 2>/dev/null; true"
                % " ".join(BINARIES)]).stdout
    have = dict(reversed(line.split()) for line in have.splitlines() if line.strip())
    changed = []
    for name in BINARIES:
        src = os.path.join(build_dir, "bin", name)
        if have.get(name) != file_sha(src):
            docker("cp", src, "%s:/usr/local/bin/%s.new" % (cname, name))
            docker("exec", cname, "mv", "/usr/local/bin/%s.new" % name, "/usr/local/bin/" + name)
            changed.append(name)
    return changed


# --------------------------------------------------------------------------- PKI

def _key_pair(path):
    if not os.path.exists(path + ".key"):
        run(["openssl", "genrsa", "-out", path + ".key", "2048"])
        run(["openssl", "rsa", "-in", path + ".key", "-pubout", "-out", path + ".pub"])


def _ca(name, cn):
    key, crt = os.path.join(K8S_PKI, name + ".key"), os.path.join(K8S_PKI, name + ".crt")
    if not os.path.exists(crt):
        os.makedirs(K8S_PKI, exist_ok=True)
        run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650", "-subj", "/CN=" + cn,
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             "-keyout", key, "-out", crt])
    return key, crt


CLIENT = ["extendedKeyUsage=clientAuth", "keyUsage=critical,digitalSignature,keyEncipherment"]


def ensure_k8s_pki(cp, controller_conf=True):
    """kubeadm's control plane PKI for one node (the serving certificate carries its name and address); with
    controller_conf, the controller's admin.conf points at this node's kube-apiserver."""
    ca_key, ca_crt = _ca("ca", "kubernetes")
    fp_key, fp_crt = _ca("front-proxy-ca", "front-proxy-ca")
    _key_pair(os.path.join(K8S_PKI, "sa"))
    node_dir = os.path.join(K8S_PKI, "%s-%s" % (cp["name"], cp["ip"]))
    sans = ("subjectAltName=DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,"
            "DNS:kubernetes.default.svc.cluster.local,DNS:%s,IP:%s,IP:%s,IP:127.0.0.1" % (cp["name"], SERVICE_IP, cp["ip"]))
    files = {"ca.crt": ca_crt, "ca.key": ca_key, "front-proxy-ca.crt": fp_crt, "front-proxy-ca.key": fp_key,
             "sa.key": os.path.join(K8S_PKI, "sa.key"), "sa.pub": os.path.join(K8S_PKI, "sa.pub")}
    key, crt = issue_cert("apiserver", "/CN=kube-apiserver", ["extendedKeyUsage=serverAuth",
                          "keyUsage=critical,digitalSignature,keyEncipherment", sans], ca_crt, ca_key, node_dir)
    files.update({"apiserver.key": key, "apiserver.crt": crt})
    key, crt = issue_cert("apiserver-kubelet-client", "/O=kubeadm:cluster-admins/CN=kube-apiserver-kubelet-client",
                          CLIENT, ca_crt, ca_key, K8S_PKI)
    files.update({"apiserver-kubelet-client.key": key, "apiserver-kubelet-client.crt": crt})
    key, crt = issue_cert("front-proxy-client", "/CN=front-proxy-client", CLIENT, fp_crt, fp_key, K8S_PKI)
    files.update({"front-proxy-client.key": key, "front-proxy-client.crt": crt})
    users = {"admin": "/O=system:masters/CN=kubernetes-admin",
             "scheduler": "/CN=system:kube-scheduler",
             "controller-manager": "/CN=system:kube-controller-manager",
             "kwok": "/O=system:masters/CN=kwok-controller"}
    confs = {}
    for user, subject in users.items():
        key, crt = issue_cert(user + "-client", subject, CLIENT, ca_crt, ca_key, K8S_PKI)
        confs[user + ".conf"] = kubeconfig(subject.rsplit("CN=", 1)[1], "https://%s:6443" % cp["ip"], ca_crt, crt, key)
    if controller_conf:
        with open(ADMIN_CONF + ".tmp", "w") as f:
            f.write(confs["admin.conf"])
        os.chmod(ADMIN_CONF + ".tmp", 0o600)
        os.replace(ADMIN_CONF + ".tmp", ADMIN_CONF)
    return files, confs


def kubeconfig(user, server, ca_crt, crt, key):
    def b64(path):
        with open(path, "rb") as f:
            return base64.b64encode(f.read()).decode()
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": user + "@kubernetes",
        "clusters": [{"name": "kubernetes", "cluster": {"server": server, "certificate-authority-data": b64(ca_crt)}}],
        "contexts": [{"name": user + "@kubernetes", "context": {"cluster": "kubernetes", "user": user}}],
        "users": [{"name": user, "user": {"client-certificate-data": b64(crt), "client-key-data": b64(key)}}],
    }, indent=2) + "\n"


# --------------------------------------------------------------------------- the node

KWOK_UNIT = """[Unit]
Description=Lab: kwok keeps the fake Nodes (and their pods) of the lab's API server alive
After=kubelet.service

[Service]
ExecStart=/usr/local/bin/kwok --kubeconfig=/etc/kubernetes/kwok.conf --config=/etc/kwok/kwok.yaml \\
  --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \\
  --node-lease-duration-seconds={lease} --cidr=10.128.0.1/9
Restart=always
RestartSec=2

[Install]
WantedBy=multi-user.target
"""


def kwok_config(build_dir):
    """kwok's stage files (from the kwok module); its options are flags in the unit (a KwokConfiguration in this
    file would replace kwok's defaults whole)."""
    docs = []
    for stage in KWOK_STAGES:
        with open(os.path.join(build_dir, "stages", stage + ".yaml")) as f:
            docs.append(f.read().strip())
    return "\n---\n".join(docs) + "\n"


def fixture(name, **values):
    with open(os.path.join(REPO, "lab", "fixtures", name)) as f:
        text = f.read()
    for key, value in values.items():
        text = text.replace("__%s__" % key, value)
    return text


def ensure_control_plane(cps, etcd_members, etcd_client_files):
    """Place (once) and start the control plane on each kube_control_plane node; return the binaries' directory."""
    if not cps:
        return None
    build_dir = build_binaries()
    servers = ",".join("https://%s:2379" % m["ip"] for m in etcd_members)
    if not servers:
        raise LabError("the lab's control plane stores its objects in the kubeadm etcd cluster: LAB_ETCD_KUBEADM_NODES "
                       "must be 1 or more")
    # More than one node: kubeadm's HA shape, every node its own kube-apiserver on the same etcd, the scheduler and
    # the controller manager electing a leader. The controller and kwok talk to the first node's API server, and kwok
    # runs there only (two would both renew every fake Node's Lease).
    for cp in cps:
        cname = PREFIX + cp["name"]
        first = cp is cps[0]
        changed = install_binaries(cname, build_dir)
        if changed:
            log("%s: installed %s" % (cp["name"], ", ".join(changed)))
        files, confs = ensure_k8s_pki(cp, controller_conf=first)
        put_file(cname, "/etc/kwok/kwok.yaml", kwok_config(build_dir), "0644")
        put_file(cname, "/etc/kubernetes/kwok.conf", confs["kwok.conf"])
        put_file(cname, "/etc/systemd/system/kwok.service", KWOK_UNIT.format(lease=KWOK_LEASE_SECONDS), "0644")
        install_standin(cname)
        manifest = "/etc/kubernetes/manifests/kube-apiserver.yaml"
        if docker("exec", cname, "test", "-e", manifest, check=False).returncode != 0:
            for dest, src in list(files.items()) + list(etcd_client_files.items()):
                with open(src) as f:
                    put_file(cname, "/etc/kubernetes/pki/" + dest, f.read())
            for conf in ("admin.conf", "scheduler.conf", "controller-manager.conf"):
                put_file(cname, "/etc/kubernetes/" + conf, confs[conf])
            values = {"ADDRESS": cp["ip"], "ETCD_SERVERS": servers, "VERSION": k8s_version(),
                      "SERVICE_CIDR": SERVICE_CIDR, "NODE_MONITOR_GRACE": NODE_MONITOR_GRACE}
            for component in MANIFESTS:
                put_file(cname, "/etc/kubernetes/manifests/%s.yaml" % component,
                         fixture(component + ".yaml.tmpl", **values))
            put_file(cname, "/etc/kubernetes/kubeadm-config.yaml", fixture(
                "kubeadm-config.yaml.tmpl", ETCD_SERVERS_LIST=", ".join(servers.split(",")), **values))
            log("%s: kubeadm-shaped control plane placed (etcd %s)" % (cp["name"], servers))
        docker("exec", cname, "systemctl", "daemon-reload")
        docker("exec", cname, "systemctl", "enable", "--now", "kubelet.service")
        if not first:
            docker("exec", cname, "systemctl", "disable", "--now", "kwok.service")
            continue
        docker("exec", cname, "systemctl", "enable", "--now", "kwok.service")
        if "kwok" in changed:
            docker("exec", cname, "systemctl", "restart", "kwok.service")
    for cp in cps:
        wait_ready(cp)
    ensure_kwok_nodes(build_dir, kwok_counts())
    ensure_cluster_dns(build_dir)
    return build_dir


def ensure_cluster_dns(build_dir):
    """kubeadm's CoreDNS Deployment in kube-system, created once (roles/dns_spread owns its affinity from then on)."""
    if kubectl(build_dir, "get", "deployment", "-n", "kube-system", "coredns", check=False).returncode == 0:
        return
    kubectl(build_dir, "create", "-f", os.path.join(REPO, "lab", "fixtures", "coredns.yaml"))
    log("created the cluster DNS Deployment (kube-system/coredns)")


def kubectl(build_dir, *args, input_data=None, check=True):
    return run([os.path.join(build_dir, "bin", "kubectl"), "--kubeconfig", ADMIN_CONF] + list(args),
               input_data=input_data, check=check)


def wait_ready(cp, timeout=300):
    """Until kube-apiserver answers /readyz (through cp's admin.conf, from the node itself)."""
    deadline = time.time() + timeout
    while True:
        proc = docker("exec", PREFIX + cp["name"], "kubectl", "--kubeconfig=/etc/kubernetes/admin.conf",
                      "get", "--raw=/readyz", check=False)
        if proc.returncode == 0 and proc.stdout.strip() == "ok":
            return
        if time.time() > deadline:
            raise LabError("kube-apiserver on %s is not ready after %ds: %s%s"
                           % (cp["name"], timeout, proc.stdout.strip()[-500:], proc.stderr.strip()[-500:]))
        time.sleep(2)


def ensure_kwok_nodes(build_dir, counts, timeout=600):
    """Create the fake Nodes that are missing (server-side apply), remove the kwok Nodes beyond the counts, and wait
    until every one is Ready."""
    want = kwok_nodes(counts)
    names = {n["metadata"]["name"] for n in want}
    have = set(kubectl(build_dir, "get", "nodes", "-l", "type=kwok", "-o", "name").stdout.split())
    have = {h.split("/", 1)[1] for h in have}
    missing = [n for n in want if n["metadata"]["name"] not in have]
    if missing:
        with tempfile.TemporaryDirectory() as d:
            # a Node's status is kept on create (the Node strategy drops only disabled fields): capacity included
            path = os.path.join(d, "nodes.json")
            with open(path, "w") as f:
                json.dump({"apiVersion": "v1", "kind": "List", "items": missing}, f)
            kubectl(build_dir, "create", "-f", path)
        log("created %d kwok Nodes" % len(missing))
    extra = sorted(have - names)
    if extra:
        # kubectl deletes one object per request, in turn: four at once, so thousands go in minutes, not ten
        chunks = [extra[i::4] for i in range(4) if extra[i::4]]
        with concurrent.futures.ThreadPoolExecutor(len(chunks)) as pool:
            list(pool.map(lambda chunk: kubectl(build_dir, "delete", "node", "--wait=false", *chunk), chunks))
        log("removed %d kwok Nodes beyond LAB_KWOK_NODES" % len(extra))
    deadline = time.time() + timeout
    while True:
        out = kubectl(build_dir, "get", "nodes", "-l", "type=kwok", "-o",
                      "jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type==\"Ready\")].status}"
                      "{\"\\n\"}{end}").stdout
        ready = {line.split()[0] for line in out.splitlines() if line.endswith(" True")}
        if names <= ready:
            return
        if time.time() > deadline:
            raise LabError("%d of %d kwok Nodes not Ready after %ds (kwok.service on the control plane node)"
                           % (len(names - ready), len(names), timeout))
        time.sleep(2)
