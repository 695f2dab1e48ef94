"""The lab's Kubernetes, made by the real kubeadm of the pinned release (lab/k8s builds it with the control plane).

- kubeadm and the kubelet are "installed" on every kubeadm node as packages would install them: /usr/bin/kubeadm and
  the control plane's binaries are links into the lab's Kubernetes build (mounted read-only, lab/nodes.py), and
  /usr/bin/kubelet is the lab's stand-in (lab/fixtures/kubelet-standin.py) under kubeadm's unit layout
  (kubelet.service with its 10-kubeadm.conf drop-in, as the kubeadm packages ship them).
- The external etcd hosts are set up as the upstream guide "Set up a High Availability etcd cluster with kubeadm"
  does: the kubelet as a static-pod runner (its 20-etcd-service-manager.conf drop-in), the certificates made with
  `kubeadm init phase certs etcd-*` from one CA (the lab's etcd CA, which events_etcd signs the Events members' with
  too), each host's kubeadm configuration kept at /etc/kubernetes/kubeadmcfg.yaml and its member made with
  `kubeadm init phase etcd local --config`.
- The control plane: HAProxy on the lab's load balancer node as the controlPlaneEndpoint (kubeadm's HA guide), the
  first control plane node made with `kubeadm init` (v1beta4 configuration, certificates uploaded), the others with
  `kubeadm join --control-plane`, the workers with `kubeadm join`. The stand-in kubelet registers every Node with a
  NoSchedule taint of the lab's (it runs static pods only); kwok's fake Nodes take the cluster's pods.

Phases kubeadm runs that the lab cannot give a real part to: preflight's checks of a container runtime and the host
kernel (the nodes' containerd and dockerd are the roles' to start, and the containers' /proc/sys is read-only) are
ignored by name (PREFLIGHT_IGNORED), and the kube-proxy add-on is skipped (no pod network or iptables here; kwok runs
the pods).
"""

import os
import secrets
import time

import yaml

from .common import PKI, PREFIX, REPO, STATE, LabError, docker, log, put_file, run
from .nodes import K8S_MOUNT

V1BETA4 = "kubeadm.k8s.io/v1beta4"
SERVICE_CIDR = "10.96.0.0/12"
CRI_SOCKET = "unix:///var/run/containerd/containerd.sock"
# The stand-in kubelet runs static pods only: every Node it registers carries this taint, so the scheduler places
# the cluster's pods on kwok's fake Nodes and never on a node where nothing would run them.
STANDIN_TAINT = {"key": "kubescale.io/lab-standin-kubelet", "effect": "NoSchedule"}
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
# kube-controller-manager marks a node NotReady after this without a heartbeat: above kwok's lease renewal
# (lab/controlplane.py, KWOK_LEASE_SECONDS), so 2,500 fake Nodes renew their leases every minute, not every 10 s.
NODE_MONITOR_GRACE = "180s"
# kube-apiserver, on SIGTERM, answers /readyz with an error at once and keeps serving this long: the load balancer
# takes it out (HAProxy checks /readyz every second, two failures) before it stops listening. No read through the
# controlPlaneEndpoint fails while one API server restarts.
SHUTDOWN_DELAY = "6s"
# Then it answers what is still in flight, refuses new requests with 429 and Retry-After (clients ask another API
# server), and gives the connections still open 2 s to close. Without it the HTTP server waits for the long-running
# watches' connections up to its 60 s shutdown timeout, so the kubelet's 30 s grace period ends every restart with
# SIGKILL. With it a restart's stop takes about 8 s.
SHUTDOWN_SEND_RETRY_AFTER = "true"
# Preflight checks that ask what the lab's containers cannot have. Everything else kubeadm checks, it checks.
PREFLIGHT_IGNORED = [
    # the container runtime is not running yet: containerd_tuning or docker_overlay2 starts it, in the site run
    "CRI", "ContainerRuntimeVersion",
    "ImagePull",  # the images kubeadm would pull: the stand-in kubelet runs the node's binaries, not images
    "SystemVerification",  # the host kernel's cgroups (v1 on some lab machines), read from a container
]
ETCD_PKI = "/etc/kubernetes/pki/etcd"
ETCD_KUBEADMCFG = "/etc/kubernetes/kubeadmcfg.yaml"
INIT_CONFIG = "/etc/kubernetes/kubeadm-config.yaml"
JOIN_CONFIG = "/etc/kubernetes/kubeadm-join.yaml"
# kubeadm's patches directory (kubelet_pulls writes its kubelet configuration patch there): every init and join names
# it, as an autoscaler's node template would.
PATCHES = "/etc/kubernetes/patches"
ETCD_TEST_KEYS = 300

FIXTURES = os.path.join(REPO, "lab", "fixtures")
KUBEADM_STATE = os.path.join(STATE, "kubeadm")

# The upstream etcd guide's drop-in that makes the kubelet a static-pod runner on an etcd host.
ETCD_HOST_KUBELET_CONFIG = {
    "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
    "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False}},
    "authorization": {"mode": "AlwaysAllow"},
    "cgroupDriver": "systemd", "address": "127.0.0.1",
    "containerRuntimeEndpoint": CRI_SOCKET, "staticPodPath": "/etc/kubernetes/manifests",
}
ETCD_HOST_DROPIN = """[Service]
Environment="KUBELET_CONFIG_ARGS=--config=/etc/systemd/system/kubelet.service.d/kubelet.conf"
Restart=always
"""
ALL_BINARIES = ["kubectl", "kubelet-config-check"]  # kubeadm is always linked
CONTROL_PLANE_BINARIES = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "etcd"]


def k8s_version():
    """The Kubernetes release lab/k8s/go.mod pins (its k8s.io/kubernetes requirement)."""
    with open(os.path.join(REPO, "lab", "k8s", "go.mod")) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "k8s.io/kubernetes" and parts[1].startswith("v"):
                return parts[1]
    raise LabError("lab/k8s/go.mod requires no k8s.io/kubernetes version")


def dump(*docs):
    return "---\n".join(yaml.safe_dump(d, default_flow_style=False, sort_keys=False) for d in docs)


def has_file(node, path):
    return docker("exec", PREFIX + node["name"], "test", "-e", path, check=False).returncode == 0


def kubeadm(node, *args, what):
    """`kubeadm ARGS` on the node; its output kept in lab/.state/kubeadm/<node>-<what>.log; a failure says where."""
    os.makedirs(KUBEADM_STATE, exist_ok=True)
    logfile = os.path.join(KUBEADM_STATE, "%s-%s.log" % (node["name"], what))
    proc = docker("exec", PREFIX + node["name"], "kubeadm", *args, check=False)
    with open(logfile, "w") as f:
        f.write("$ kubeadm %s\n%s\n%s" % (" ".join(args), proc.stdout, proc.stderr))
    if proc.returncode != 0:
        raise LabError("kubeadm %s on %s failed (%s): %s" % (what, node["name"], os.path.relpath(logfile, REPO),
                                                             (proc.stderr or proc.stdout).strip()[-1500:]))
    return proc


# --------------------------------------------------------------------------- packages

def link_binaries(node, binaries):
    """/usr/local/bin/<name> links into the lab's build (mounted read-only at K8S_MOUNT) for each of `binaries`."""
    links = " ".join("ln -sfn %s/current/bin/%s /usr/local/bin/%s;" % (K8S_MOUNT, b, b) for b in binaries)
    docker("exec", PREFIX + node["name"], "sh", "-c", links)


PACKAGE_FILES = ["kubeadm-packages.sh", "kubelet-standin.py", "kubelet.service", "10-kubeadm.conf"]
PACKAGE_DIR = "/usr/local/lib/kubescale-lab/packages"


def install_packages(node, binaries):
    """kubeadm, kubectl and the stand-in kubelet under kubeadm's unit layout (kubelet.service enabled, not started:
    kubeadm starts it), and links to `binaries` of the lab's build: lab/fixtures/kubeadm-packages.sh on the node, the
    script the lab's image bake runs too."""
    cname = PREFIX + node["name"]
    for name in PACKAGE_FILES:
        with open(os.path.join(FIXTURES, name)) as f:
            put_file(cname, "%s/%s" % (PACKAGE_DIR, name), f.read(), "0644")
    put_file(cname, PACKAGE_DIR + "/kubelet-version", k8s_version() + "\n", "0644")
    docker("exec", cname, "sh", "%s/kubeadm-packages.sh" % PACKAGE_DIR, PACKAGE_DIR, *binaries)


# --------------------------------------------------------------------------- the load balancer

def haproxy_config(lb, cps):
    servers = "\n".join("  server %s %s:6443" % (cp["name"], cp["ip"]) for cp in cps)
    return """# Written by lab/kubeadm.py: kubeadm's controlPlaneEndpoint, as its HA guide's HAProxy.
global
  log /dev/log local0
  daemon
defaults
  mode tcp
  log global
  option tcplog
  timeout connect 5s
  timeout client 1h
  timeout server 1h
frontend kube-apiserver
  bind %s:6443
  default_backend kube-apiservers
backend kube-apiservers
  # /readyz drains an API server that shuts down; not the Events etcd's checks, whose outage would empty the backend
  option httpchk GET /readyz?exclude=etcd-override-0&exclude=etcd-override-readiness-0
  http-check expect status 200
  balance roundrobin
  default-server inter 1s fall 2 rise 2 check check-ssl verify none
%s
""" % (lb["ip"], servers)


def ensure_lb(lb, cps):
    """HAProxy on the load balancer node, every control plane node a backend checked on /readyz (without the Events
    etcd's checks); reloaded when the backends change."""
    cname = PREFIX + lb["name"]
    text = haproxy_config(lb, cps)
    have = docker("exec", cname, "cat", "/etc/haproxy/haproxy.cfg", check=False).stdout
    if have != text:
        put_file(cname, "/etc/haproxy/haproxy.cfg", text, "0644")
        docker("exec", cname, "systemctl", "enable", "haproxy.service")
        docker("exec", cname, "systemctl", "reload-or-restart", "haproxy.service")
        log("%s: HAProxy in front of %s" % (lb["name"], ", ".join(cp["name"] for cp in cps)))
    else:
        docker("exec", cname, "systemctl", "enable", "--now", "haproxy.service")
    return "%s:6443" % lb["ip"]


# --------------------------------------------------------------------------- external etcd hosts

def local_kubeadm():
    """kubeadm of the lab's build, on the controller (the etcd guide's host0: it makes the members' certificates)."""
    build = run(["bash", os.path.join(REPO, "lab", "k8s", "build.sh")]).stdout.strip().splitlines()[-1]
    return os.path.join(build, "bin", "kubeadm")


def etcd_host_config(member, members, cert_dir=None):
    """The guide's kubeadmcfg.yaml for one external etcd host (cert_dir: where the controller makes its certificates)."""
    cluster = ",".join("%s=https://%s:2380" % (m["name"], m["ip"]) for m in members)
    ip = member["ip"]
    extra = [("initial-cluster", cluster), ("initial-cluster-state", "new"), ("name", member["name"]),
             ("listen-peer-urls", "https://%s:2380" % ip), ("listen-client-urls", "https://%s:2379" % ip),
             ("advertise-client-urls", "https://%s:2379" % ip), ("initial-advertise-peer-urls", "https://%s:2380" % ip)]
    init = {"apiVersion": V1BETA4, "kind": "InitConfiguration",
            "nodeRegistration": {"name": member["name"]}, "localAPIEndpoint": {"advertiseAddress": ip}}
    cluster_cfg = {"apiVersion": V1BETA4, "kind": "ClusterConfiguration", "kubernetesVersion": k8s_version(),
                   "etcd": {"local": {"serverCertSANs": [ip], "peerCertSANs": [ip],
                                      "extraArgs": [{"name": k, "value": v} for k, v in extra]}}}
    if cert_dir:
        cluster_cfg["certificatesDir"] = cert_dir
    return dump(init, cluster_cfg)


def etcd_certs(members):
    """Each member's server, peer and healthcheck-client certificates, and kube-apiserver's etcd client certificate,
    made by kubeadm on the controller from the lab's etcd CA; {member name: {file: path}}, and the client's files."""
    kubeadm_bin = local_kubeadm()
    base = os.path.join(PKI, "kubeadm-etcd")
    out = {}
    for m in members:
        cert_dir = os.path.join(base, "%s-%s" % (m["name"], m["ip"]))  # the SANs carry the address
        os.makedirs(os.path.join(cert_dir, "etcd"), exist_ok=True)
        for ext in ("crt", "key"):
            dest = os.path.join(cert_dir, "etcd", "ca." + ext)
            if not os.path.exists(dest):
                with open(os.path.join(PKI, "etcd-ca." + ext)) as src, open(dest, "w") as f:
                    f.write(src.read())
        cfg = os.path.join(cert_dir, "kubeadmcfg.yaml")
        with open(cfg, "w") as f:
            f.write(etcd_host_config(m, members, cert_dir))
        for phase in ("etcd-server", "etcd-peer", "etcd-healthcheck-client", "apiserver-etcd-client"):
            run([kubeadm_bin, "init", "phase", "certs", phase, "--config", cfg])
        out[m["name"]] = {name: os.path.join(cert_dir, "etcd", name) for name in
                          ("ca.crt", "server.crt", "server.key", "peer.crt", "peer.key", "healthcheck-client.crt",
                           "healthcheck-client.key")}
    first = os.path.join(base, "%s-%s" % (members[0]["name"], members[0]["ip"]))
    client = {"etcd/ca.crt": os.path.join(first, "etcd", "ca.crt"),
              "apiserver-etcd-client.crt": os.path.join(first, "apiserver-etcd-client.crt"),
              "apiserver-etcd-client.key": os.path.join(first, "apiserver-etcd-client.key")}
    return out, client


def kubeadm_etcdctl(*args):
    """etcdctl on a kubeadm member, with kubeadm's healthcheck client certificate, against the whole cluster."""
    return ["etcdctl", "--cacert=%s/ca.crt" % ETCD_PKI, "--cert=%s/healthcheck-client.crt" % ETCD_PKI,
            "--key=%s/healthcheck-client.key" % ETCD_PKI] + list(args)


def ensure_external_etcd(members, timeout=180):
    """The external etcd hosts, once: nodes that have a member (its manifest, or one etcd_local_disk holds aside) are
    left alone, the roles own them from then on. Returns kube-apiserver's etcd client files."""
    if not members:
        return {}
    certs, client = etcd_certs(members)
    todo = []
    for m in members:
        cname = PREFIX + m["name"]
        install_packages(m, ALL_BINARIES + ["etcd"])
        put_file(cname, "/etc/systemd/system/kubelet.service.d/kubelet.conf", dump(ETCD_HOST_KUBELET_CONFIG), "0644")
        put_file(cname, "/etc/systemd/system/kubelet.service.d/20-etcd-service-manager.conf", ETCD_HOST_DROPIN, "0644")
        if has_file(m, "/etc/kubernetes/manifests/etcd.yaml") or has_file(m, "/etc/kubernetes/kubescale-held/etcd.yaml"):
            docker("exec", cname, "sh", "-c", "systemctl daemon-reload && systemctl enable --now kubelet.service")
            continue
        for name, src in certs[m["name"]].items():
            with open(src) as f:
                put_file(cname, "%s/%s" % (ETCD_PKI, name), f.read())
        put_file(cname, ETCD_KUBEADMCFG, etcd_host_config(m, members), "0600")
        # kubeadm makes the data dir root's, mode 0700 (the image has the etcd package's, etcd's); it is the emulated
        # network disk's mount point (lab/disks.py), emptied in place
        docker("exec", cname, "sh", "-c", "find /var/lib/etcd -mindepth 1 -delete && chown root:root /var/lib/etcd "
               "&& chmod 0700 /var/lib/etcd")
        docker("exec", cname, "sh", "-c", "systemctl daemon-reload && systemctl enable --now kubelet.service")
        kubeadm(m, "init", "phase", "etcd", "local", "--config", ETCD_KUBEADMCFG, what="etcd-local")
        todo.append(m)
    first = PREFIX + members[0]["name"]
    endpoints = "--endpoints=" + ",".join("https://%s:2379" % m["ip"] for m in members)
    deadline = time.time() + timeout
    while True:
        proc = docker("exec", first, *kubeadm_etcdctl(endpoints, "endpoint", "health"), check=False)
        if proc.returncode == 0:
            break
        if time.time() > deadline:
            raise LabError("the lab's external etcd cluster is not healthy after %ds: %s" % (timeout, proc.stderr.strip()))
        time.sleep(1)
    if todo or not docker("exec", first, *kubeadm_etcdctl(endpoints, "get", "/kubescale-test/1")).stdout.strip():
        # Data to keep: tests count these keys on every member after each move, rejoin and failure.
        docker("exec", first, "sh", "-c",
               "i=1; while [ $i -le %d ]; do %s put /kubescale-test/$i value-$i >/dev/null || exit 1; i=$((i+1)); done"
               % (ETCD_TEST_KEYS, " ".join(kubeadm_etcdctl(endpoints))))
        log("external etcd cluster (kubeadm init phase etcd local) formed on %s, %d keys written"
            % (", ".join(m["name"] for m in members), ETCD_TEST_KEYS))
    return client


# --------------------------------------------------------------------------- the control plane and the workers

def node_registration(node, control_plane):
    return {"name": node["name"], "criSocket": CRI_SOCKET,
            "taints": ([CONTROL_PLANE_TAINT] if control_plane else []) + [STANDIN_TAINT],
            # a control plane node's taints are kubeadm's to add after its kubelet registered it (mark-control-plane):
            # the stand-in registers with its own from the start, or the scheduler may bind a pod to it meanwhile
            "kubeletExtraArgs": [{"name": "node-ip", "value": node["ip"]}] + (
                [{"name": "register-with-taints", "value": "%s:%s" % (STANDIN_TAINT["key"], STANDIN_TAINT["effect"])}]
                if control_plane else []),
            "ignorePreflightErrors": PREFLIGHT_IGNORED}


def cluster_configuration(endpoint, etcd_members):
    return {
        "apiVersion": V1BETA4, "kind": "ClusterConfiguration", "kubernetesVersion": k8s_version(),
        "controlPlaneEndpoint": endpoint,
        "networking": {"serviceSubnet": SERVICE_CIDR, "dnsDomain": "cluster.local"},
        "etcd": {"external": {"endpoints": ["https://%s:2379" % m["ip"] for m in etcd_members],
                              "caFile": "/etc/kubernetes/pki/etcd/ca.crt",
                              "certFile": "/etc/kubernetes/pki/apiserver-etcd-client.crt",
                              "keyFile": "/etc/kubernetes/pki/apiserver-etcd-client.key"}},
        "apiServer": {"certSANs": [endpoint.rsplit(":", 1)[0]],
                      "extraArgs": [{"name": "shutdown-delay-duration", "value": SHUTDOWN_DELAY},
                                    {"name": "shutdown-send-retry-after", "value": SHUTDOWN_SEND_RETRY_AFTER}]},
        "controllerManager": {"extraArgs": [{"name": "node-monitor-grace-period", "value": NODE_MONITOR_GRACE}]},
    }


def certificate_key():
    """The key kubeadm encrypts the uploaded control plane certificates with (kubeadm-certs Secret), kept in the lab's
    state so that a later `lab up` can join more control plane nodes."""
    path = os.path.join(KUBEADM_STATE, "certificate-key")
    if not os.path.exists(path):
        os.makedirs(KUBEADM_STATE, exist_ok=True)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(secrets.token_hex(32))
    with open(path) as f:
        return f.read().strip()


def init_first(cp, endpoint, etcd_members, etcd_client_files):
    """`kubeadm init` on the first control plane node, from /etc/kubernetes/kubeadm-config.yaml (kept, as operators
    keep theirs)."""
    cname = PREFIX + cp["name"]
    for dest, src in etcd_client_files.items():
        with open(src) as f:
            put_file(cname, "/etc/kubernetes/pki/" + dest, f.read())
    init = {"apiVersion": V1BETA4, "kind": "InitConfiguration",
            "localAPIEndpoint": {"advertiseAddress": cp["ip"], "bindPort": 6443},
            "nodeRegistration": node_registration(cp, True),
            "certificateKey": certificate_key(), "skipPhases": ["addon/kube-proxy"],
            "patches": {"directory": PATCHES}}
    docker("exec", cname, "mkdir", "-p", PATCHES)
    put_file(cname, INIT_CONFIG, dump(init, cluster_configuration(endpoint, etcd_members)))
    kubeadm(cp, "init", "--config", INIT_CONFIG, "--upload-certs", what="init")
    log("%s: kubeadm init (controlPlaneEndpoint %s)" % (cp["name"], endpoint))


def join_command(first):
    """A fresh bootstrap token's join arguments (`kubeadm token create --print-join-command`), as an autoscaler's
    node template would get them: [endpoint, --token, T, --discovery-token-ca-cert-hash, H]."""
    out = kubeadm(first, "token", "create", "--ttl", "2h", "--print-join-command", what="token").stdout
    words = out.strip().splitlines()[-1].split()
    return words[2:]


def join(node, first, control_plane):
    """`kubeadm join` from a JoinConfiguration on the node (/etc/kubernetes/kubeadm-join.yaml)."""
    endpoint, _t, token, _h, ca_hash = join_command(first)[:5]
    cfg = {"apiVersion": V1BETA4, "kind": "JoinConfiguration",
           "discovery": {"bootstrapToken": {"apiServerEndpoint": endpoint, "token": token, "caCertHashes": [ca_hash]}},
           "nodeRegistration": node_registration(node, control_plane), "patches": {"directory": PATCHES}}
    if control_plane:
        # the uploaded certificates expire after two hours: upload them again for this join (with the cluster's
        # configuration: the external etcd's client certificate and CA go with them; its certificateKey encrypts them)
        kubeadm(first, "init", "phase", "upload-certs", "--upload-certs", "--config", INIT_CONFIG, what="upload-certs")
        cfg["controlPlane"] = {"localAPIEndpoint": {"advertiseAddress": node["ip"], "bindPort": 6443},
                               "certificateKey": certificate_key()}
    docker("exec", PREFIX + node["name"], "mkdir", "-p", PATCHES)
    put_file(PREFIX + node["name"], JOIN_CONFIG, dump(cfg))
    kubeadm(node, "join", "--config", JOIN_CONFIG, what="join")
    log("%s: kubeadm join%s" % (node["name"], " --control-plane" if control_plane else ""))


def ensure_cluster(cps, workers, lb, etcd_members, etcd_client_files):
    """The control plane and the workers, made once each: a node with /etc/kubernetes/kubelet.conf has joined."""
    endpoint = ensure_lb(lb, cps)
    first = cps[0]
    for cp in cps:
        install_packages(cp, ALL_BINARIES + CONTROL_PLANE_BINARIES)
    for w in workers:
        install_packages(w, ALL_BINARIES)
    if not has_file(first, "/etc/kubernetes/admin.conf"):
        init_first(first, endpoint, etcd_members, etcd_client_files)
    for cp in cps[1:]:
        if not has_file(cp, "/etc/kubernetes/kubelet.conf"):
            join(cp, first, True)
    for w in workers:
        if not has_file(w, "/etc/kubernetes/kubelet.conf"):
            join(w, first, False)
    for node in cps + workers:
        docker("exec", PREFIX + node["name"], "systemctl", "enable", "--now", "kubelet.service")
    return endpoint
