"""Benchmark: image_preload's archive from the controller (copy) vs from a URL each node downloads (image_preload_url).

On the first N lab CPU workers (default 20), each round and each way: the nodes' archive and sidecar are removed
(as on nodes that need a new archive), then the image_preload tuning of playbooks/node_cpu.yml runs on all N in one
batch. Both ways deliver the same bytes - the lab's archive, served for the URL way by Debian's nginx on the lab
network (lab/blob.py, the stand-in for Azure Blob storage). Measured per way:

  node rx bytes      what each node's network interface received during the run (its /sys/class/net counters)
  from the blob      what nginx sent to each node (its access log)
  from controller    node rx - from the blob: the SSH traffic of the run (modules, arguments, and with copy the
                     archive), i.e. what goes through the controller's network
  wall               the run's wall time

The ways alternate round after round in one run. Writes bench/preload_url.json.

    .venv/bin/python -m bench.preload_url [--nodes 20] [--rounds 2]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

from bench import fleet  # lab sizing and node names
from lab.blob import Blob

DIR = "/opt/kubescale/images"
CACHE = os.path.join(fleet.REPO, "lab", ".state", "images", "preload.tar.zst")


def sh(host, script):
    return subprocess.run(["docker", "exec", fleet.labnodes.PREFIX + host, "sh", "-c", script], check=True,
                          capture_output=True, text=True).stdout


def rx(host):
    return int(sh(host, "cat /sys/class/net/eth0/statistics/rx_bytes"))


def address(host):
    return subprocess.run(["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                           fleet.labnodes.PREFIX + host], check=True, capture_output=True, text=True).stdout.strip()


def converge(hosts, extra, only_preload=True):
    """The wall of node_cpu.yml on hosts with the extra variables (only its image_preload tuning by default)."""
    args = ["-e", json.dumps(extra)] + (["--tags", "kubescale_image_preload"] if only_preload else [])
    return fleet.run(fleet.REPO, "kube_node_cpu", hosts, measure=True, extra_args=args)["wall_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(fleet.REPO, "bench", "preload_url.json"))
    args = ap.parse_args()
    counts = fleet.lab_counts({"kube_node_cpu": args.nodes})
    fleet.lab_up(counts)
    hosts = fleet.hosts_of("kube_node_cpu", args.nodes)
    converge(hosts, {}, only_preload=False)  # every node converged, the controller's cache holds the lab's archive
    with open(CACHE + ".json") as f:
        sha = json.load(f)["sha256"]
    size = os.path.getsize(CACHE)
    root = tempfile.mkdtemp(prefix="kubescale-bench-blob-", dir="/var/tmp")
    os.chmod(root, 0o755)
    for name in ("preload.tar.zst", "preload.tar.zst.json"):
        shutil.copy(os.path.join(os.path.dirname(CACHE), name), os.path.join(root, name))
        os.chmod(os.path.join(root, name), 0o644)
    addrs = dict((address(h), h) for h in hosts)
    rows = {"copy": [], "url": []}
    try:
        measure(Blob(root), sha, hosts, addrs, rows, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report(rows, size, args)


def measure(server, sha, hosts, addrs, rows, args):
    with server as blob:
        ways = [("copy", {}),
                ("url", dict(image_preload_url=blob.url("preload.tar.zst") + "?sv=2022-11-02&sr=c&sig=lab",
                             image_preload_url_sha256=sha))]
        for rnd in range(args.rounds):
            for way, extra in ways:
                for h in hosts:
                    sh(h, "rm -f %s/preload.tar.zst %s/preload.tar.zst.json" % (DIR, DIR))
                before = dict((h, rx(h)) for h in hosts)
                served = len(blob.requests())
                wall = converge(hosts, extra)
                got = dict((h, rx(h) - before[h]) for h in hosts)
                from_blob = dict((h, 0) for h in hosts)
                for r in blob.requests()[served:]:
                    if r["addr"] in addrs:
                        from_blob[addrs[r["addr"]]] += r["bytes"]
                row = dict(wall_s=wall,
                           node_rx_bytes_per_node=statistics.mean(got.values()),
                           blob_bytes_per_node=statistics.mean(from_blob.values()),
                           controller_bytes_per_node=statistics.mean(got[h] - from_blob[h] for h in hosts))
                rows[way].append(row)
                fleet.log("round %d %-4s N=%d: %.0f bytes/node from the controller, %.0f from the blob, %.1f s wall"
                          % (rnd + 1, way, args.nodes, row["controller_bytes_per_node"], row["blob_bytes_per_node"],
                             row["wall_s"]))


def report(rows, size, args):
    summary = {}
    for way, runs in rows.items():
        summary[way] = dict((k, statistics.median(r[k] for r in runs)) for k in runs[0])
        summary[way]["runs"] = runs
    c, u = summary["copy"], summary["url"]
    print()
    print("archive: %d bytes; N=%d nodes, median of %d rounds" % (size, args.nodes, args.rounds))
    print("%-6s %22s %18s %10s" % ("", "controller bytes/node", "blob bytes/node", "wall s"))
    for way in ("copy", "url"):
        s = summary[way]
        print("%-6s %22.0f %18.0f %10.1f" % (way, s["controller_bytes_per_node"], s["blob_bytes_per_node"],
                                             s["wall_s"]))
    print("controller bytes per node: copy/url %.1fx; for 2,500 nodes and a 200 MB archive the copy sends %.0f GB"
          % (c["controller_bytes_per_node"] / u["controller_bytes_per_node"], 2500 * 200e6 / 1e9))
    with open(args.out, "w") as f:
        json.dump(dict(nodes=args.nodes, rounds=args.rounds, archive_bytes=size, ways=summary), f, indent=2,
                  sort_keys=True)
    fleet.log("wrote %s" % args.out)


if __name__ == "__main__":
    main()
