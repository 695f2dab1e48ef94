"""Benchmark: the Azure inventory of a 2,500-VM subscription, with and without the inventory cache.

lab/azure_arm.py generates the subscription (scale sets of 500: 3 in 5 Uniform Standard_D15_v2, 2 in 5 Flexible
Standard_NC24s_v3, ARM pages of 100) and serves it on 127.0.0.1. `ansible-inventory -i inventories/azure/azure_rm.yml
--list` runs against it, unchanged, in three ways:

  no cache      every run lists the subscription again (what every ansible-playbook run costs by default)
  cache, cold   ANSIBLE_INVENTORY_CACHE=true, jsonfile cache empty: the same requests, then the cache is written
  cache, warm   the next run within cache_timeout: the inventory comes from the cache

For each: wall time, the controller's CPU seconds (user+sys of ansible-inventory), and the ARM requests the server
saw: HTTP requests on the wire, API calls (entries of a /batch count one each), and by kind. The replay answers in
microseconds, so wall time here is the controller's own cost; against Azure add its latency per serial request.

    .venv/bin/python bench/azure_inventory.py [--vms 2500] [--page-size 100] [--rounds 1]
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "lab"))
import azure_arm  # noqa: E402

INVENTORY = os.path.join(REPO, "inventories", "azure", "azure_rm.yml")
BIN = os.path.dirname(sys.executable)


def run(server, extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"), **server.client_env(), **extra)
    server.clear()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    out = subprocess.run([os.path.join(BIN, "ansible-inventory"), "-i", INVENTORY, "--list"], cwd=REPO, env=env,
                         capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode:
        sys.exit("ansible-inventory failed:\n" + out.stderr[-3000:])
    inv = json.loads(out.stdout)
    stats = server.stats()
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 2),
        "hosts": len(inv["_meta"]["hostvars"]),
        "cpu_workers": len(inv.get("kube_node_cpu", {}).get("hosts", [])),
        "gpu_workers": len(inv.get("kube_node_gpu", {}).get("hosts", [])),
        "http_requests": stats.get("request", 0),
        "api_calls": stats["api_calls"],
        "batches": stats.get("batch", 0),
        "by_kind": {k: v for k, v in sorted(stats.items()) if k not in ("request", "api_calls", "batch_entry")},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--vms", type=int, default=2500)
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()

    server = azure_arm.Arm(azure_arm.Subscription.generate(args.vms), page_size=args.page_size).start()
    cache_dir = tempfile.mkdtemp(prefix="kubescale-inventory-cache-")
    cache = {"ANSIBLE_INVENTORY_CACHE": "true", "ANSIBLE_INVENTORY_CACHE_PLUGIN": "ansible.builtin.jsonfile",
             "ANSIBLE_INVENTORY_CACHE_CONNECTION": cache_dir, "ANSIBLE_INVENTORY_CACHE_TIMEOUT": "600"}
    results = {"no cache": [], "cache, cold": [], "cache, warm": []}
    try:
        for _round in range(args.rounds):  # the three ways alternate in each round: same machine load
            results["no cache"].append(run(server, {}))
            shutil.rmtree(cache_dir, ignore_errors=True)
            results["cache, cold"].append(run(server, cache))
            results["cache, warm"].append(run(server, cache))
    finally:
        server.stop()
        shutil.rmtree(cache_dir, ignore_errors=True)

    print("Azure inventory of %d VMs (scale sets of 500, pages of %d), median of %d rounds"
          % (args.vms, args.page_size, args.rounds))
    header = ("", "wall s", "CPU s", "hosts", "HTTP reqs", "API calls", "calls/VM", "by kind")
    print("%-12s %8s %8s %7s %10s %10s %8s  %s" % header)
    summary = {}
    for name, runs in results.items():
        row = dict(runs[-1])
        row["wall_s"] = round(statistics.median(r["wall_s"] for r in runs), 2)
        row["cpu_s"] = round(statistics.median(r["cpu_s"] for r in runs), 2)
        summary[name] = row
        print("%-12s %8.2f %8.2f %7d %10d %10d %8.2f  %s" % (
            name, row["wall_s"], row["cpu_s"], row["hosts"], row["http_requests"], row["api_calls"],
            row["api_calls"] / float(args.vms), ", ".join("%s %d" % kv for kv in row["by_kind"].items())))
    print(json.dumps({"vms": args.vms, "page_size": args.page_size, "results": summary}))


if __name__ == "__main__":
    main()
