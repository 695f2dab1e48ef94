"""Benchmark: the real kube-scheduler's default profile vs scheduler_binpack's bin-packing profile, on kwok Nodes.

Needs the lab's control plane with scheduler_binpack applied (make site): one kube-scheduler runs both profiles,
`default-scheduler` (LeastAllocated + NodeResourcesBalancedAllocation, the spreading default) and `bin-packing`
(NodeResourcesFit MostAllocated), so the two differ in nothing else. The benchmark registers its own kwok Nodes
(--nodes, default 1,000: four in five Standard_D15_v2 - 20 CPU, 140 GiB - and one in five Standard_NC24 - 24 CPU,
224 GiB, 4 GPUs, tainted for GPU pods only), labelled and tainted so no other pod lands there, and removes them after.

Each round, for each profile in turn (alternating which goes first), it submits the same seeded batch workload
(--seed): small, medium and large CPU pods and 1-4 GPU pods, sized to fill --fill of the CPU class. It waits until
every pod is bound, then records:

  nodes used         nodes with at least one pod, per class
  empty nodes        nodes with none (what a cluster autoscaler could remove)
  lower bound        per class, max over cpu/memory/gpu of ceil(total requests / one node's allocatable)
  ratio              nodes used / lower bound
  schedule time      from the first pod's creation to the last pod's PodScheduled (the API server's timestamps)

and deletes the pods. Writes bench/binpack.json and bench/binpack.png (pods per node, nodes sorted, both profiles).

    .venv/bin/python -m bench.binpack [--nodes 1000] [--rounds 2] [--fill 0.4] [--seed 7]
"""

import argparse
import calendar
import json
import math
import os
import random
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from lab import controlplane

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NS = "kubescale-binpack-bench"
LABEL = "kubescale.io/bench"
TAINT = {"key": LABEL, "value": "binpack", "effect": "NoSchedule"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
PROFILES = ("default-scheduler", "bin-packing")
CLASSES = {  # class: (name prefix, share of nodes, allocatable)
    "cpu": ("bench-cpu", 0.8, {"cpu": 20, "memory": 140, "nvidia.com/gpu": 0}),
    "gpu": ("bench-gpu", 0.2, {"cpu": 24, "memory": 224, "nvidia.com/gpu": 4}),
}
# (share of CPU pods, cpu range, memory GiB range); GPU pods ask for 1-4 GPUs and 5 CPU / 50 GiB per GPU
SHAPES = [(0.6, (0.5, 2), (1, 8)), (0.3, (3, 6), (8, 32)), (0.1, (10, 16), (40, 100))]


def kubectl(*args, stdin=None, check=True, timeout="60s"):
    """The lab's kubectl (lab/controlplane.py); with check, a non-zero exit raises LabError with kubectl's stderr."""
    return controlplane.kubectl(controlplane.build_binaries(), "--request-timeout=" + timeout, *args,
                                input_data=stdin, check=check)


def node_names(total):
    gpu = int(round(total * CLASSES["gpu"][1]))
    return {"cpu": ["%s-%04d" % (CLASSES["cpu"][0], i) for i in range(1, total - gpu + 1)],
            "gpu": ["%s-%04d" % (CLASSES["gpu"][0], i) for i in range(1, gpu + 1)]}


def node_object(name, cls):
    alloc = CLASSES[cls][2]
    res = {"cpu": str(alloc["cpu"]), "memory": "%dGi" % alloc["memory"], "pods": "110"}
    if alloc["nvidia.com/gpu"]:
        res["nvidia.com/gpu"] = str(alloc["nvidia.com/gpu"])
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                     "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", LABEL: "binpack",
                                "kubescale.io/bench-class": cls,
                                "node.kubernetes.io/instance-type": "Standard_NC24" if cls == "gpu" else
                                "Standard_D15_v2"}},
        "spec": {"taints": [TAINT] + ([GPU_TAINT] if cls == "gpu" else [])},
        "status": {"capacity": res, "allocatable": res},
    }


def apply_list(items):
    """Create `items` in chunks, several kubectl processes side by side (one kubectl sends its POSTs in turn)."""
    chunks = [items[i:i + 250] for i in range(0, len(items), 250)]

    def one(chunk):
        kubectl("create", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": chunk}),
                timeout="300s")
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, chunks))


def ensure_nodes(names, timeout=900):
    have = set(kubectl("get", "nodes", "-l", LABEL, "-o", "jsonpath={.items[*].metadata.name}").stdout.split())
    missing = [node_object(n, cls) for cls, ns in names.items() for n in ns if n not in have]
    if missing:
        apply_list(missing)
    want = sum(len(v) for v in names.values())
    deadline = time.time() + timeout
    while True:
        # Ready, and without the not-ready taint the node lifecycle controller removes some time after: a node that
        # still has it takes no pod, and the first profile measured would see fewer nodes than the second
        items = json.loads(kubectl("get", "nodes", "-l", LABEL, "-o", "json", timeout="120s").stdout)["items"]
        ready = sum(1 for n in items
                    if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))
                    and not any(t["key"].startswith("node.kubernetes.io/") for t in n["spec"].get("taints", [])))
        if ready >= want:
            return
        if time.time() > deadline:
            raise SystemExit("%d of %d benchmark Nodes Ready and untainted after %ds" % (ready, want, timeout))
        time.sleep(3)


def workload(seed, names, fill):
    """The same pods for both profiles: CPU pods filling `fill` of the CPU class's CPU, GPU pods `fill` of its GPUs."""
    rng = random.Random(seed)
    cpu_cap = len(names["cpu"]) * CLASSES["cpu"][2]["cpu"]
    gpu_cap = len(names["gpu"]) * CLASSES["gpu"][2]["nvidia.com/gpu"]
    pods, cpu, gpu = [], 0.0, 0
    while cpu < fill * cpu_cap:
        r, acc, shape = rng.random(), 0.0, SHAPES[-1]
        for candidate in SHAPES:
            acc += candidate[0]
            if r <= acc:
                shape = candidate
                break
        c = round(rng.uniform(*shape[1]) * 2) / 2
        m = int(rng.uniform(*shape[2]))
        pods.append({"class": "cpu", "cpu": c, "memory": max(m, 1), "gpu": 0})
        cpu += c
    while gpu < fill * gpu_cap:
        g = rng.choice([1, 1, 2, 4])
        pods.append({"class": "gpu", "cpu": 5 * g, "memory": 50 * g, "gpu": g})
        gpu += g
    rng.shuffle(pods)
    return pods


def pod_object(i, spec, profile):
    requests = {"cpu": str(spec["cpu"]), "memory": "%dGi" % spec["memory"]}
    tolerations = [dict(TAINT, operator="Equal")]
    if spec["gpu"]:
        requests["nvidia.com/gpu"] = str(spec["gpu"])
        tolerations.append(dict(GPU_TAINT, operator="Equal"))
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p-%05d" % i, "namespace": NS, "labels": {"app": "batch"}},
        "spec": {"schedulerName": profile, "nodeSelector": {LABEL: "binpack"}, "tolerations": tolerations,
                 "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "work", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": requests, "limits": {
                                     k: v for k, v in requests.items() if k == "nvidia.com/gpu"}}}]},
    }


def lower_bound(pods, names):
    out = {}
    for cls in CLASSES:
        alloc = CLASSES[cls][2]
        mine = [p for p in pods if p["class"] == cls]
        need = max(math.ceil(sum(p[r] for p in mine) / alloc[k]) for r, k in
                   (("cpu", "cpu"), ("memory", "memory"), ("gpu", "nvidia.com/gpu")) if alloc[k])
        out[cls] = need
    return out


def ts(text):
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))


def one_run(profile, pods, names, timeout=900):
    kubectl("create", "namespace", NS)
    started = time.time()
    apply_list([pod_object(i, p, profile) for i, p in enumerate(pods)])
    submitted = time.time()
    deadline = time.time() + timeout
    while True:
        items = json.loads(kubectl("get", "pods", "-n", NS, "-o", "json", timeout="120s").stdout)["items"]
        bound = [p for p in items if p["spec"].get("nodeName")]
        if len(bound) == len(pods):
            break
        if time.time() > deadline:
            raise SystemExit("%s: %d of %d pods bound after %ds" % (profile, len(bound), len(pods), timeout))
        time.sleep(2)
    wall = time.time() - started
    created = min(ts(p["metadata"]["creationTimestamp"]) for p in items)
    scheduled = max(ts(c["lastTransitionTime"]) for p in items for c in p["status"].get("conditions", [])
                    if c["type"] == "PodScheduled")
    per_node = {}
    for p in items:
        per_node[p["spec"]["nodeName"]] = per_node.get(p["spec"]["nodeName"], 0) + 1
    kubectl("delete", "namespace", NS, "--wait=true", timeout="600s")
    result = {"profile": profile, "pods": len(pods), "wall_s": round(wall, 1),
              "submit_s": round(submitted - started, 1), "schedule_s": scheduled - created, "classes": {}}
    for cls, ns in names.items():
        used = sum(1 for n in ns if per_node.get(n))
        result["classes"][cls] = {"nodes": len(ns), "used": used, "empty": len(ns) - used}
    result["pods_per_node"] = {cls: sorted((per_node.get(n, 0) for n in ns), reverse=True)
                               for cls, ns in names.items()}
    return result


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, cls in zip(axes, ("cpu", "gpu")):
        for profile, colour in zip(PROFILES, ("tab:orange", "tab:blue")):
            run = [r for r in results if r["profile"] == profile][-1]
            counts = run["pods_per_node"][cls]
            ax.plot(range(1, len(counts) + 1), counts, color=colour, drawstyle="steps-post",
                    label="%s: %d of %d nodes used" % (profile, run["classes"][cls]["used"], len(counts)))
        ax.set_title("%s class (%s)" % (cls.upper(), "Standard_NC24" if cls == "gpu" else "Standard_D15_v2"))
        ax.set_xlabel("nodes, fullest first")
        ax.set_ylabel("pods on the node")
        ax.legend()
    fig.suptitle("kube-scheduler: default profile vs scheduler_binpack (MostAllocated), same seeded batch")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--fill", type=float, default=0.4)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep-nodes", action="store_true", help="leave the benchmark's Nodes registered")
    args = ap.parse_args()
    names = node_names(args.nodes)
    kubectl("delete", "namespace", NS, "--ignore-not-found", "--wait=true", timeout="600s")
    print("registering %d kwok Nodes (%d cpu, %d gpu)" % (args.nodes, len(names["cpu"]), len(names["gpu"])),
          flush=True)
    ensure_nodes(names)
    pods = workload(args.seed, names, args.fill)
    bound = lower_bound(pods, names)
    print("workload: %d pods (seed %d, fill %.2f); lower bound %s" % (len(pods), args.seed, args.fill, bound),
          flush=True)
    results = []
    try:
        for rnd in range(args.rounds):
            order = PROFILES if rnd % 2 == 0 else PROFILES[::-1]
            for profile in order:
                r = one_run(profile, pods, names)
                r["round"] = rnd + 1
                for cls, c in r["classes"].items():
                    c["lower_bound"] = bound[cls]
                    c["ratio"] = round(c["used"] / float(bound[cls]), 3) if bound[cls] else None
                results.append(r)
                print("round %d %-17s cpu used %4d (x%.2f of %d), gpu used %4d (x%.2f of %d), empty %4d; "
                      "schedule %ds, wall %.0fs" % (
                          rnd + 1, profile, r["classes"]["cpu"]["used"], r["classes"]["cpu"]["ratio"], bound["cpu"],
                          r["classes"]["gpu"]["used"], r["classes"]["gpu"]["ratio"], bound["gpu"],
                          sum(c["empty"] for c in r["classes"].values()), r["schedule_s"], r["wall_s"]), flush=True)
    finally:
        if not args.keep_nodes:
            kubectl("delete", "nodes", "-l", LABEL, "--wait=false", check=False, timeout="300s")
    summary = {}
    for profile in PROFILES:
        mine = [r for r in results if r["profile"] == profile]
        summary[profile] = {
            "used": {cls: statistics.median(r["classes"][cls]["used"] for r in mine) for cls in CLASSES},
            "ratio": {cls: statistics.median(r["classes"][cls]["ratio"] for r in mine) for cls in CLASSES},
            "empty": statistics.median(sum(c["empty"] for c in r["classes"].values()) for r in mine),
            "schedule_s": statistics.median(r["schedule_s"] for r in mine),
        }
    out = {"nodes": args.nodes, "seed": args.seed, "fill": args.fill, "pods": len(pods), "lower_bound": bound,
           "summary": summary, "runs": results}
    with open(os.path.join(REPO, "bench", "binpack.json"), "w") as f:
        json.dump(out, f, indent=1)
    plot(results, os.path.join(REPO, "bench", "binpack.png"))
    print()
    print("| profile | CPU nodes used (x lower bound %d) | GPU nodes used (x lower bound %d) | empty nodes | "
          "schedule |" % (bound["cpu"], bound["gpu"]))
    print("| --- | --- | --- | --- | --- |")
    for profile in PROFILES:
        s = summary[profile]
        print("| %s | %d (x%.2f) | %d (x%.2f) | %d of %d | %ds |" % (
            profile, s["used"]["cpu"], s["ratio"]["cpu"], s["used"]["gpu"], s["ratio"]["gpu"], s["empty"],
            args.nodes, s["schedule_s"]))
    print("wrote bench/binpack.json and bench/binpack.png")


if __name__ == "__main__":
    main()
