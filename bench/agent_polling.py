"""Benchmark: node agents polling the real API server, before vs after apiserver_load's tunings.

On the lab's control plane (make site): --pods pods (default 1,000) run on the lab's kwok Nodes, and --agents node
agents (default 200; each its own service account, the way every node's Fluentd or Datadog agent is) each look after
the pods of one kwok Node. Three phases, measured for --seconds each, in one run (--rounds, alternating the order of
before and after):

  idle     no agent runs
  before   the seed's agents: every --interval seconds each GETs every pod of its node, one by one, with no
           resourceVersion (Fluentd's kubernetes_metadata filter on cache misses), so each is a read from etcd; no
           FlowSchema of their own (they share the suggested service-accounts schema)
  after    the tunings: apiserver_load's PriorityLevelConfiguration and FlowSchema (applied with the role, with the
           agents' namespace in apiserver_load_agents), and agents that list their node's pods from the watch cache
           (resourceVersion=0) once and then watch (an informer: what the watch and cache settings turn the agents
           into)

Measured in each phase: the bytes the main etcd members send to their clients (kube-apiserver) per second, from
etcd's own etcd_network_client_grpc_sent_bytes_total on the three kubeadm etcd members; a normal client's (the admin
user's) GET latency p50/p99, one request every 50 ms; the agents' requests per second; and in `after` the share of
agent responses whose X-Kubernetes-PF-FlowSchema-UID header names the agents' FlowSchema.
Writes bench/agent_polling.json.

    .venv/bin/python -m bench.agent_polling [--agents 200] [--pods 1000] [--interval 10] [--seconds 60] [--rounds 1]
"""

import argparse
import base64
import http.client
import json
import os
import ssl
import statistics
import subprocess
import tempfile
import threading
import time

import yaml

from bench.binpack import kubectl  # the same kubectl with the lab's admin kubeconfig
from lab import controlplane

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PODS_NS = "kubescale-agents-pods"
AGENTS_NS = "kubescale-agents"
FS_NAME = "kubescale-node-agents"
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")
ETCD = ["etcd-kubeadm-1", "etcd-kubeadm-2", "etcd-kubeadm-3"]
METRIC = "etcd_network_client_grpc_sent_bytes_total"
SCRAPE = r"""
import ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile="/etc/kubernetes/pki/etcd/ca.crt")
ctx.load_cert_chain("/etc/kubernetes/pki/etcd/healthcheck-client.crt", "/etc/kubernetes/pki/etcd/healthcheck-client.key")
ctx.check_hostname = False
text = urllib.request.urlopen("https://%s:2379/metrics" % sys.argv[1], context=ctx, timeout=10).read().decode()
print(sum(float(l.split()[-1]) for l in text.splitlines() if l.startswith("etcd_network_client_grpc_sent_bytes_total")))
"""


class Api(object):
    """The lab's API server over HTTPS, as admin.conf's user or as a bearer token (one connection per object)."""

    def __init__(self, token=None):
        with open(controlplane.ADMIN_CONF) as f:
            conf = yaml.safe_load(f)
        cluster = conf["clusters"][0]["cluster"]
        user = conf["users"][0]["user"]
        self.host = cluster["server"].split("//", 1)[1]
        self.ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        self.ctx.check_hostname = False
        self.headers = {"Accept": "application/json"}
        if token:
            self.headers["Authorization"] = "Bearer " + token
        else:
            d = tempfile.mkdtemp()
            crt, key = os.path.join(d, "c.crt"), os.path.join(d, "c.key")
            with open(crt, "wb") as f:
                f.write(base64.b64decode(user["client-certificate-data"]))
            with open(key, "wb") as f:
                f.write(base64.b64decode(user["client-key-data"]))
            self.ctx.load_cert_chain(crt, key)
        self.conn = None

    def request(self, method, path, body=None, timeout=30):
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPSConnection(self.host, context=self.ctx, timeout=timeout)
            try:
                headers = dict(self.headers)
                if body is not None:
                    headers["Content-Type"] = "application/json"
                self.conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
                resp = self.conn.getresponse()
                data = resp.read()
                return resp.status, resp.getheader("X-Kubernetes-PF-FlowSchema-UID"), data
            except (OSError, http.client.HTTPException):
                self.conn = None
                if attempt == 2:
                    raise
        return None


def etcd_sent():
    total = 0.0
    for member in ETCD:
        ip = subprocess.run(["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                             "kslab-" + member], capture_output=True, text=True, check=True).stdout.strip()
        out = subprocess.run(["docker", "exec", "-i", "kslab-" + member, "python3", "-", ip], input=SCRAPE,
                             capture_output=True, text=True, check=True).stdout
        total += float(out.strip())
    return total


def setup(args):
    nodes = sorted(kubectl("get", "nodes", "-l", "type=kwok", "-o", "jsonpath={.items[*].metadata.name}").stdout
                   .split())
    for ns in (PODS_NS, AGENTS_NS):
        kubectl("delete", "namespace", ns, "--ignore-not-found", "--wait=true", timeout="600s")
        kubectl("create", "namespace", ns)
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "w-%05d" % i, "namespace": PODS_NS, "labels": {"app": "work"}},
             "spec": {"nodeName": nodes[i % len(nodes)], "terminationGracePeriodSeconds": 0,
                      "containers": [{"name": "w", "image": "registry.k8s.io/pause:3.10",
                                      "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}
            for i in range(args.pods)]
    for i in range(0, len(pods), 250):
        kubectl("create", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": pods[i:i + 250]}),
                timeout="600s")
    sas = [{"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "agent-%03d" % i, "namespace": AGENTS_NS}} for i in range(args.agents)]
    kubectl("create", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": sas}))
    rbac = [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "kubescale-agents-bench"},
             "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "kubescale-agents-bench"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                         "name": "kubescale-agents-bench"},
             "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
                           "name": "system:serviceaccounts:" + AGENTS_NS}]}]
    kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": rbac}))
    admin = Api()
    tokens = []
    for sa in sas:
        status, _fs, data = admin.request("POST", "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (
            AGENTS_NS, sa["metadata"]["name"]), {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                                 "spec": {"expirationSeconds": 7200}})
        assert status == 201, data[:500]
        tokens.append(json.loads(data)["status"]["token"])
    deadline = time.time() + 600
    while True:
        out = kubectl("get", "pods", "-n", PODS_NS, "--field-selector=status.phase=Running", "-o", "name").stdout
        if len(out.split()) >= args.pods:
            break
        assert time.time() < deadline, "pods not Running"
        time.sleep(3)
    by_node = {}
    for p in pods:
        by_node.setdefault(p["spec"]["nodeName"], []).append(p["metadata"]["name"])
    return nodes, tokens, by_node


def role(*extra):
    proc = subprocess.run(["ansible-playbook", "-i", HOSTS, "tests/integration/apiserver_role.yml"] + list(extra),
                          cwd=REPO, capture_output=True, text=True, check=False,
                          env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg")))
    if proc.returncode != 0:
        raise SystemExit("apiserver_load: %s" % proc.stdout[-2000:])


class Phase(object):
    def __init__(self):
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.agent_requests = 0
        self.agent_fs = {}
        self.latencies = []


def polling_agent(phase, token, node, names, interval, offset):
    api = Api(token)
    time.sleep(offset)
    while not phase.stop.is_set():
        started = time.time()
        for name in names:
            if phase.stop.is_set():
                return
            try:
                status, fs, _data = api.request("GET", "/api/v1/namespaces/%s/pods/%s" % (PODS_NS, name))
            except (OSError, http.client.HTTPException):
                continue
            with phase.lock:
                phase.agent_requests += 1
                phase.agent_fs[fs] = phase.agent_fs.get(fs, 0) + 1
        phase.stop.wait(max(0.0, interval - (time.time() - started)))


def informer_agent(phase, token, node, offset):
    """List the node's pods from the watch cache once, then watch them (what an informer does)."""
    api = Api(token)
    time.sleep(offset)
    selector = "spec.nodeName%3D" + node
    status, fs, data = api.request("GET", "/api/v1/namespaces/%s/pods?fieldSelector=%s&resourceVersion=0" % (
        PODS_NS, selector))
    rv = json.loads(data)["metadata"]["resourceVersion"]
    conn = http.client.HTTPSConnection(api.host, context=api.ctx, timeout=5)
    conn.request("GET", "/api/v1/namespaces/%s/pods?watch=1&fieldSelector=%s&resourceVersion=%s&"
                 "allowWatchBookmarks=true" % (PODS_NS, selector, rv), headers=api.headers)
    resp = conn.getresponse()
    with phase.lock:
        for seen in (fs, resp.getheader("X-Kubernetes-PF-FlowSchema-UID")):
            phase.agent_fs[seen] = phase.agent_fs.get(seen, 0) + 1
    while not phase.stop.is_set():
        try:
            resp.read1(65536)
        except (OSError, http.client.HTTPException):
            phase.stop.wait(1)
    conn.close()


def normal_client(phase):
    api = Api()
    while not phase.stop.is_set():
        started = time.time()
        try:
            api.request("GET", "/api/v1/namespaces/default/configmaps/kube-root-ca.crt")
        except (OSError, http.client.HTTPException):
            continue
        phase.latencies.append(time.time() - started)
        phase.stop.wait(max(0.0, 0.05 - (time.time() - started)))


def measure(name, args, nodes, tokens, by_node, fs_uid=None):
    phase = Phase()
    threads = [threading.Thread(target=normal_client, args=(phase,), daemon=True)]
    for i, token in enumerate(tokens):
        node = nodes[i % len(nodes)]
        offset = args.interval * i / float(len(tokens))
        if name == "before":
            threads.append(threading.Thread(target=polling_agent, daemon=True, args=(
                phase, token, node, by_node.get(node, []), args.interval, offset)))
        elif name == "after":
            threads.append(threading.Thread(target=informer_agent, daemon=True, args=(phase, token, node,
                                                                                      offset / 10.0)))
    for t in threads:
        t.start()
    time.sleep(min(args.interval, 10))  # the agents reach their rhythm (their FlowSchema counts are kept from the start:
    phase.latencies = []                # an informer's requests are its first list and watch)
    with phase.lock:
        phase.agent_requests = 0
    sent0, t0 = etcd_sent(), time.time()
    time.sleep(args.seconds)
    sent1, t1 = etcd_sent(), time.time()
    with phase.lock:
        requests, fs_counts = phase.agent_requests, dict(phase.agent_fs)
    latencies = sorted(phase.latencies)
    phase.stop.set()
    for t in threads:
        t.join(10)
    seconds = t1 - t0
    out = {"phase": name, "seconds": round(seconds, 1), "etcd_sent_bytes_per_s": round((sent1 - sent0) / seconds),
           "agent_requests_per_s": round(requests / seconds, 1),
           "normal_p50_ms": round(1000 * latencies[len(latencies) // 2], 2),
           "normal_p99_ms": round(1000 * latencies[int(len(latencies) * 0.99)], 2),
           "normal_requests": len(latencies)}
    if fs_uid and name != "idle":
        total = sum(fs_counts.values()) or 1
        out["agent_share_in_their_flowschema"] = round(fs_counts.get(fs_uid, 0) / float(total), 3)
    print("%-7s etcd sent %9d B/s, agents %6.1f req/s, normal client p50 %6.2f ms p99 %7.2f ms%s" % (
        name, out["etcd_sent_bytes_per_s"], out["agent_requests_per_s"], out["normal_p50_ms"], out["normal_p99_ms"],
        "" if "agent_share_in_their_flowschema" not in out else
        ", %.0f%% of agent requests in their FlowSchema" % (100 * out["agent_share_in_their_flowschema"])),
        flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--agents", type=int, default=200)
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--interval", type=float, default=10.0)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    print("setting up %d pods and %d agents' service accounts" % (args.pods, args.agents), flush=True)
    nodes, tokens, by_node = setup(args)
    agents = json.dumps({"apiserver_load_agents": [{"name": "*", "namespace": AGENTS_NS}]})
    results = []
    try:
        for rnd in range(args.rounds):
            order = ("idle", "before", "after") if rnd % 2 == 0 else ("idle", "after", "before")
            for name in order:
                if name == "after":
                    role("-e", agents)
                    fs_uid = kubectl("get", "flowschema", FS_NAME, "-o", "jsonpath={.metadata.uid}").stdout
                else:
                    kubectl("delete", "flowschema", FS_NAME, "--ignore-not-found")
                    fs_uid = None
                r = measure(name, args, nodes, tokens, by_node, fs_uid)
                r["round"] = rnd + 1
                results.append(r)
    finally:
        role()  # the site's settings again
        for ns in (PODS_NS, AGENTS_NS):
            kubectl("delete", "namespace", ns, "--wait=false", check=False)
        kubectl("delete", "clusterrolebinding,clusterrole", "kubescale-agents-bench", check=False)
    summary = {}
    for name in ("idle", "before", "after"):
        mine = [r for r in results if r["phase"] == name]
        summary[name] = {k: statistics.median(r[k] for r in mine) for k in (
            "etcd_sent_bytes_per_s", "agent_requests_per_s", "normal_p50_ms", "normal_p99_ms")}
    s = summary
    after_bytes = max(1.0, s["after"]["etcd_sent_bytes_per_s"])
    ratios = {"etcd_bytes_before_over_after": round(s["before"]["etcd_sent_bytes_per_s"] / after_bytes, 1),
              "p99_before_over_idle": round(s["before"]["normal_p99_ms"] / s["idle"]["normal_p99_ms"], 2),
              "p99_after_over_idle": round(s["after"]["normal_p99_ms"] / s["idle"]["normal_p99_ms"], 2)}
    with open(os.path.join(REPO, "bench", "agent_polling.json"), "w") as f:
        json.dump({"agents": args.agents, "pods": args.pods, "interval_s": args.interval, "seconds": args.seconds,
                   "summary": summary, "ratios": ratios, "runs": results}, f, indent=1)
    print()
    print("| phase | etcd -> API server | agent requests | normal client p50 | p99 |")
    print("| --- | --- | --- | --- | --- |")
    for name in ("idle", "before", "after"):
        x = s[name]
        print("| %s | %.0f kB/s | %.1f/s | %.2f ms | %.2f ms |" % (
            name, x["etcd_sent_bytes_per_s"] / 1000.0, x["agent_requests_per_s"], x["normal_p50_ms"],
            x["normal_p99_ms"]))
    print("etcd bytes before/after: %.1fx; normal p99 before/idle %.2fx, after/idle %.2fx" % (
        ratios["etcd_bytes_before_over_after"], ratios["p99_before_over_idle"], ratios["p99_after_over_idle"]))
    print("wrote bench/agent_polling.json")


if __name__ == "__main__":
    main()
