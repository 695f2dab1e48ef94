"""Benchmark: the seed's headline - etcd off the network-attached disk, onto the VM's local SSD - through the real API
server of the lab.

The seed measured etcd's writes at 2 ms on Azure's network disk and 200 us on the local SSD. Here, on the lab's kubeadm
etcd (three static pod members, the lab's kube-apiserver stores its objects there):

  1. network disk: each member, one at a time, is stopped, its data copied onto `slowdisk` (lab/k8s/cmd/slowdisk: a
     go-fuse passthrough on the node's OS disk that waits --delay before every fsync/fdatasync, the round trip of a
     remote disk) and started from there: its manifest's etcd-data hostPath points at the emulated disk;
  2. measure: N ConfigMaps created through kube-apiserver one after another (request p50/p99), and etcd's own
     etcd_disk_wal_fsync_duration_seconds (p50/p99 from the histogram buckets, all members);
  3. `playbooks/etcd.yml -l etcd_kubeadm`: etcd_local_disk moves every member onto its SSD (its disk_latency gate
     measures both disks first; its figures are reported);
  4. measure again, the same way, in the same run.

    make lab && (make site once) && .venv/bin/python -m bench.etcd_disk [--delay 2ms] [--configmaps 300]

Not part of `make test`: it moves the kubeadm members twice (~3 minutes). Leaves them on the SSD, as `make site` does.
"""

import argparse
import base64
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

from lab import controlplane
from tests.integration import json_report  # the json callback's report, read one way

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")
MANIFEST = "/etc/kubernetes/manifests/etcd.yaml"
HOLD = "/etc/kubernetes/bench-held"
NETDISK, BACKING = "/var/lib/netdisk", "/var/lib/netdisk-backing"
PKI = "/etc/kubernetes/pki/etcd"
TLS = ["--cacert=%s/ca.crt" % PKI, "--cert=%s/healthcheck-client.crt" % PKI, "--key=%s/healthcheck-client.key" % PKI]
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
           ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"))


def node(name, *argv, check=True, stdin=None):
    proc = subprocess.run(["docker", "exec", "-i", "kslab-" + name] + list(argv), capture_output=True, text=True,
                          input=stdin, check=False)
    if check and proc.returncode != 0:
        sys.exit("bench: %s: %s failed: %s" % (name, " ".join(argv), proc.stderr.strip()))
    return proc


def members():
    with open(HOSTS) as f:
        hosts = yaml.safe_load(f)["all"]["children"]["etcd_kubeadm"]["hosts"]
    return sorted(hosts)


def member_ips():
    with open(HOSTS) as f:
        hosts = yaml.safe_load(f)["all"]["children"]["etcd_kubeadm"]["hosts"]
    return [hosts[m]["lab_ip"] for m in sorted(hosts)]


def etcdctl(via, *args, check=True):
    eps = ",".join("https://%s:2379" % ip for ip in member_ips())
    return node(via, "etcdctl", "--endpoints=" + eps, *TLS, "--command-timeout=10s", *args, check=check)


def wait(what, test, timeout=180):
    deadline = time.time() + timeout
    while not test():
        if time.time() > deadline:
            sys.exit("bench: timed out waiting for %s" % what)
        time.sleep(1)


def data_path(member):
    pod = yaml.safe_load(node(member, "cat", MANIFEST).stdout)
    return next(v["hostPath"]["path"] for v in pod["spec"]["volumes"] if v["name"] == "etcd-data"), pod


def healthy_all():
    return etcdctl(members()[0], "endpoint", "health", check=False).returncode == 0


def to_network_disk(member, slowdisk, delay):
    """Stop the member, put its data on the emulated network disk, start it from there."""
    current, pod = data_path(member)
    node(member, "mkdir", "-p", HOLD)
    node(member, "mv", MANIFEST, HOLD + "/etcd.yaml")
    wait(member + " to stop", lambda: node(member, "pgrep", "-x", "etcd", check=False).returncode != 0)
    if node(member, "mountpoint", "-q", NETDISK, check=False).returncode != 0:
        subprocess.run(["docker", "cp", slowdisk, "kslab-%s:/usr/local/bin/slowdisk" % member], check=True)
        node(member, "mkdir", "-p", NETDISK, BACKING)
        node(member, "systemd-run", "--unit=slowdisk", "--collect", "/usr/local/bin/slowdisk", "-delay", delay,
             BACKING, NETDISK)
        wait("slowdisk on " + member, lambda: node(member, "mountpoint", "-q", NETDISK, check=False).returncode == 0)
    node(member, "rm", "-rf", NETDISK + "/etcd")
    node(member, "rsync", "-aHX", current + "/", NETDISK + "/etcd/")
    # the old copy goes, so the SSD holds nothing the role would have to keep (it copies back over the top)
    node(member, "find", current, "-mindepth", "1", "-delete")
    for v in pod["spec"]["volumes"]:
        if v["name"] == "etcd-data":
            v["hostPath"]["path"] = NETDISK + "/etcd"
    node(member, "sh", "-c", "cat > %s/etcd.yaml" % HOLD, stdin=yaml.safe_dump(pod, sort_keys=False))
    node(member, "mv", HOLD + "/etcd.yaml", MANIFEST)
    wait(member + " healthy from the network disk", healthy_all)


def metric_histogram(member, name):
    """{le: cumulative count} of one histogram on a member's metrics endpoint (kubeadm's http://127.0.0.1:2381)."""
    text = node(member, "python3", "-c", "import urllib.request as u; print(u.urlopen("
                "'http://127.0.0.1:2381/metrics', timeout=10).read().decode())").stdout
    buckets = {}
    for line in text.splitlines():
        if line.startswith(name + "_bucket{"):
            le = line.split('le="', 1)[1].split('"', 1)[0]
            buckets[float("inf") if le == "+Inf" else float(le)] = float(line.rsplit(" ", 1)[1])
    return buckets


def histogram_quantile(q, before, after):
    """Prometheus' histogram_quantile over the increase between two scrapes (linear within a bucket)."""
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0.0) for b in bounds]
    total = counts[-1]
    if total <= 0:
        return None
    rank, prev_bound, prev_count = q * total, 0.0, 0.0
    for bound, count in zip(bounds, counts):
        if count >= rank:
            if bound == float("inf"):
                return prev_bound
            return prev_bound + (bound - prev_bound) * (rank - prev_count) / max(count - prev_count, 1e-9)
        prev_bound, prev_count = bound, count
    return prev_bound


class Api(object):
    """HTTPS to kube-apiserver with admin.conf's client certificate (standard library only)."""

    def __init__(self):
        with open(controlplane.ADMIN_CONF) as f:
            conf = yaml.safe_load(f)
        self.server = conf["clusters"][0]["cluster"]["server"]
        self.tmp = tempfile.mkdtemp(prefix="kubescale-bench-")
        paths = {}
        for key, field in (("ca", conf["clusters"][0]["cluster"]["certificate-authority-data"]),
                           ("crt", conf["users"][0]["user"]["client-certificate-data"]),
                           ("key", conf["users"][0]["user"]["client-key-data"])):
            paths[key] = os.path.join(self.tmp, key)
            with open(paths[key], "wb") as f:
                f.write(base64.b64decode(field))
        self.ctx = ssl.create_default_context(cafile=paths["ca"])
        self.ctx.load_cert_chain(paths["crt"], paths["key"])

    def request(self, method, path, body=None):
        req = urllib.request.Request(self.server + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, context=self.ctx, timeout=30) as resp:
            return json.loads(resp.read() or b"{}")


def measure(api, label, count):
    ns = "kubescale-bench"
    try:
        api.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    except urllib.error.HTTPError as exc:
        if exc.code != 409:
            raise
    before = {m: metric_histogram(m, "etcd_disk_wal_fsync_duration_seconds") for m in members()}
    latencies = []
    for i in range(count):
        body = {"metadata": {"name": "%s-%d-%d" % (label, int(time.time()), i)}, "data": {"k": "v" * 512}}
        t0 = time.perf_counter()
        api.request("POST", "/api/v1/namespaces/%s/configmaps" % ns, body)
        latencies.append((time.perf_counter() - t0) * 1000)
    after = {m: metric_histogram(m, "etcd_disk_wal_fsync_duration_seconds") for m in members()}
    merged_before, merged_after = {}, {}
    for m in after:
        for b, c in after[m].items():
            merged_after[b] = merged_after.get(b, 0.0) + c
            merged_before[b] = merged_before.get(b, 0.0) + before[m].get(b, 0.0)
    latencies.sort()
    q = statistics.quantiles(latencies, n=100)
    return {
        "where": label, "configmaps": count,
        "request_p50_ms": round(statistics.median(latencies), 2), "request_p99_ms": round(q[98], 2),
        "wal_fsync_p50_ms": round(1000 * histogram_quantile(0.5, merged_before, merged_after), 3),
        "wal_fsync_p99_ms": round(1000 * histogram_quantile(0.99, merged_before, merged_after), 3),
        "wal_fsyncs": int(merged_after[float("inf")] - merged_before.get(float("inf"), 0)),
    }


def move_to_ssd():
    """etcd_local_disk over the kubeadm members (as make site runs it); the gate's fdatasync p99s per member."""
    env = dict(ENV, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1")
    t0 = time.perf_counter()
    proc = subprocess.run([os.path.join(REPO, ".venv/bin/ansible-playbook"), "playbooks/etcd.yml", "-l",
                           "etcd_kubeadm"], cwd=REPO, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit("bench: playbooks/etcd.yml failed:\n%s" % proc.stdout[-4000:])
    gates = {}
    for _task, host, res in json_report.results(proc.stdout):
        measured = [r for r in res.get("results", []) if isinstance(r, dict) and "latency" in r]
        if len(measured) == 2:  # the SSD first, then the current directory
            gates[host] = {"ssd_p99_ms": measured[0]["latency"]["p99_ms"],
                           "current_p99_ms": measured[1]["latency"]["p99_ms"]}
    return gates, wall


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", default="2ms", help="slowdisk's wait before every fsync (the seed's 2 ms)")
    parser.add_argument("--configmaps", type=int, default=300)
    args = parser.parse_args()
    if not os.path.exists(controlplane.ADMIN_CONF):
        sys.exit("bench: no lab control plane (make lab)")
    for m in members():
        if node(m, "test", "-c", "/dev/fuse", check=False).returncode != 0:
            sys.exit("bench: %s has no /dev/fuse (nodes made before slowdisk existed: make lab-down lab)" % m)
    slowdisk = os.path.join(controlplane.build_binaries(), "bin", "slowdisk")
    print("bench: putting the kubeadm members on the emulated network disk (%s per fsync)" % args.delay, flush=True)
    for m in members():
        to_network_disk(m, slowdisk, args.delay)
    api = Api()
    network = measure(api, "network", args.configmaps)
    print("bench: moving them with playbooks/etcd.yml (etcd_local_disk)", flush=True)
    gates, wall = move_to_ssd()
    ssd = measure(api, "ssd", args.configmaps)
    for m in members():
        node(m, "systemctl", "stop", "slowdisk", check=False)
    rows = [network, ssd]
    header = ("etcd on", "req p50", "req p99", "wal fsync p50", "wal fsync p99", "fsyncs")
    print("\n%-8s %10s %10s %14s %14s %8s" % header)
    for r in rows:
        cells = (r["where"], r["request_p50_ms"], r["request_p99_ms"], r["wal_fsync_p50_ms"], r["wal_fsync_p99_ms"],
                 r["wal_fsyncs"])
        print("%-8s %8.2fms %8.2fms %12.3fms %12.3fms %8d" % cells)
    ratio = {k: round(network[k] / ssd[k], 1) for k in ("request_p50_ms", "wal_fsync_p50_ms", "wal_fsync_p99_ms")}
    print("\nnetwork disk / SSD: wal fsync p50 %.1fx, p99 %.1fx, request p50 %.1fx (the seed: 2 ms -> 200 us, 10x)"
          % (ratio["wal_fsync_p50_ms"], ratio["wal_fsync_p99_ms"], ratio["request_p50_ms"]))
    print("etcd_local_disk's gate (fdatasync p99, current -> SSD), move of 3 members in %.0f s:" % wall)
    for host, g in sorted(gates.items()):
        print("  %s: %.2f ms -> %.2f ms" % (host, g["current_p99_ms"], g["ssd_p99_ms"]))
    print(json.dumps({"network": network, "ssd": ssd, "ratio": ratio, "gates": gates, "move_seconds": round(wall)}))


if __name__ == "__main__":
    main()
