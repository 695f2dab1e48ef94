"""Benchmark: the Azure inventory of a 2,500-VM subscription, kubescale.tuning.azure_rm beside azure.azcollection's.

tests/azure/arm_replay.py generates the subscription (scale sets of 500: 3 in 5 Uniform Standard_D15_v2, 2 in 5 Flexible
Standard_NC24s_v3, ARM pages of 100) and serves it on 127.0.0.1. Two inventories run against it, alternating in each
round (the same machine load):

  kubescale     inventories/azure/azure_rm.yml, unchanged: kubescale.tuning.azure_rm (documented list operations)
  azure_rm      azure.azcollection.azure_rm as it is (tests/azure/baseline: /batch, an instance view per VM, the SDK
                per Uniform instance) with the options the file had before kubescale.tuning.azure_rm listed on its
                own: batch_fetch, its host filters, ansible_host and the class groups as Jinja2 expressions

each in four ways:

  no cache      ansible-inventory --list, every run lists the subscription again (what every run costs by default)
  cache, cold   ANSIBLE_INVENTORY_CACHE=true, jsonfile cache empty: the same requests, then the cache is written
  cache, warm   the next run within cache_timeout, ansible-inventory --list: the inventory from the cache, printed
  warm, load    the same, ansible-inventory --graph: the inventory from the cache, loaded as a playbook run loads it

For each: wall time, the controller's CPU seconds (user+sys of ansible-inventory), hosts, and the ARM requests the
server saw: HTTP requests on the wire and API calls (entries of a /batch count one each). The replay answers in
microseconds, so wall time here is the controller's own cost; against Azure add its latency per round of requests.

    .venv/bin/python -m bench.azure_inventory [--vms 2500] [--page-size 100] [--rounds 1] [--json FILE]
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

from tests.azure import arm_replay

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

INVENTORY = os.path.join(REPO, "inventories", "azure", "azure_rm.yml")
BASELINE = os.path.join(REPO, "tests", "azure", "baseline")
BIN = os.path.dirname(sys.executable)
CLASSES = ["etcd", "etcd_events", "kube_control_plane", "kube_node_cpu", "kube_node_gpu"]

# azure.azcollection's azure_rm with what inventories/azure/azure_rm.yml asked of it: the class groups as expressions
# (node_class is this collection's; the baseline reads the same tag, which the generated fleet sets on every scale set).
BASELINE_CONFIG = {
    "plugin": "kubescale_baseline.azure.azure_rm",
    "auth_source": "auto",
    "include_vm_resource_groups": ["*"],
    "include_vmss_resource_groups": ["*"],
    "batch_fetch": True,
    "plain_host_names": True,
    "default_host_filters": ["powerstate != 'running'", "provisioning_state != 'succeeded'"],
    "hostvar_expressions": {"ansible_host": "private_ipv4_addresses | first"},
    "conditional_groups": {cls: "(tags.node_class | default('')) == '%s'" % cls for cls in CLASSES},
    "keyed_groups": [{"prefix": "node_class", "key": "tags.node_class | default('untagged', true)"}],
}


def run(server, path, extra, args=("--list",)):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.pathsep.join([os.path.join(REPO, ".collections"), BASELINE]),
               **server.client_env(), **extra)
    server.clear()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    out = subprocess.run([os.path.join(BIN, "ansible-inventory"), "-i", path, *args], cwd=REPO, env=env,
                         capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode:
        sys.exit("ansible-inventory failed:\n" + out.stderr[-3000:])
    if "--graph" in args:
        # "  |  |--name" for a host, "|--@group:" for a group
        hosts = len({line.split("|--", 1)[1].strip() for line in out.stdout.splitlines()
                     if "|--" in line and not line.split("|--", 1)[1].startswith("@")})
    else:
        hosts = len(json.loads(out.stdout)["_meta"]["hostvars"])
    stats = server.stats()
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 2),
        "hosts": hosts,
        "http_requests": stats.get("request", 0) - stats.get("metadata", 0) - stats.get("token", 0),
        "api_calls": stats["api_calls"] - stats.get("metadata", 0) - stats.get("token", 0),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--vms", type=int, default=2500)
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()

    server = arm_replay.Arm(arm_replay.Subscription.generate(args.vms), page_size=args.page_size).start()
    work = tempfile.mkdtemp(prefix="kubescale-inventory-bench-")
    baseline = os.path.join(work, "baseline", "azure_rm.yml")
    os.makedirs(os.path.dirname(baseline))
    shutil.copytree(os.path.join(os.path.dirname(INVENTORY), "group_vars"),
                    os.path.join(os.path.dirname(baseline), "group_vars"))
    with open(baseline, "w") as f:
        json.dump(BASELINE_CONFIG, f)
    plugins = {"kubescale": INVENTORY, "azure_rm": baseline}
    ways = ("no cache", "cache, cold", "cache, warm", "warm, load")
    results = {p: {w: [] for w in ways} for p in plugins}
    try:
        for _round in range(args.rounds):
            for plugin, path in plugins.items():
                cache_dir = os.path.join(work, "cache-" + plugin)
                cache = {"ANSIBLE_INVENTORY_CACHE": "true", "ANSIBLE_INVENTORY_CACHE_PLUGIN": "ansible.builtin.jsonfile",
                         "ANSIBLE_INVENTORY_CACHE_CONNECTION": cache_dir, "ANSIBLE_INVENTORY_CACHE_TIMEOUT": "600"}
                results[plugin]["no cache"].append(run(server, path, {}))
                shutil.rmtree(cache_dir, ignore_errors=True)
                results[plugin]["cache, cold"].append(run(server, path, cache))
                results[plugin]["cache, warm"].append(run(server, path, cache))
                results[plugin]["warm, load"].append(run(server, path, cache, ("--graph",)))
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)

    print("Azure inventory of %d VMs (scale sets of 500, pages of %d), median of %d rounds"
          % (args.vms, args.page_size, args.rounds))
    print("%-10s %-12s %8s %8s %7s %10s %10s %9s" % ("plugin", "", "wall s", "CPU s", "hosts", "HTTP reqs",
                                                     "API calls", "calls/VM"))
    summary = {}
    for plugin, by_way in results.items():
        summary[plugin] = {}
        for way, runs in by_way.items():
            row = dict(runs[-1])
            row["wall_s"] = round(statistics.median(r["wall_s"] for r in runs), 2)
            row["cpu_s"] = round(statistics.median(r["cpu_s"] for r in runs), 2)
            summary[plugin][way] = row
            print("%-10s %-12s %8.2f %8.2f %7d %10d %10d %9.3f" % (
                plugin, way, row["wall_s"], row["cpu_s"], row["hosts"], row["http_requests"], row["api_calls"],
                row["api_calls"] / float(args.vms)))
    doc = {"vms": args.vms, "page_size": args.page_size, "rounds": args.rounds, "results": summary}
    print(json.dumps(doc))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
