"""Benchmark: the real kube-scheduler's default profile vs scheduler_binpack's bin-packing profile, on kwok Nodes.

Needs the lab's control plane with scheduler_binpack applied (make site): one kube-scheduler runs both profiles,
`default-scheduler` (LeastAllocated + NodeResourcesBalancedAllocation, the spreading default) and `bin-packing`
(NodeResourcesFit MostAllocated), so the two differ in nothing else. The benchmark registers its own kwok Nodes
(--nodes, default 1,000: four in five Standard_D15_v2 - 20 CPU, 140 GiB - and one in five Standard_NC24 - 24 CPU,
224 GiB, 4 GPUs, tainted for GPU pods only), labelled and tainted so no other pod lands there, and removes them after.

For each fill (--fills, default 0.4,0.6,0.8), each round, each profile in turn (alternating which goes first), it
submits the same seeded batch workload (--seed): small, medium and large CPU pods and 1-4 GPU pods, sized to fill that
share of each class. It waits until the scheduler has placed every pod it can (each pod bound, or marked Unschedulable,
and no bind for --settle seconds), then submits one large pod per class (a 16-CPU / 100 GiB pod and a 4-GPU pod, the
seed's "large pods") and waits up to --large-wait seconds for each. It records:

  nodes used         nodes with at least one pod, per class
  empty nodes        nodes with none (what a cluster autoscaler could remove)
  lower bound        per class, max over cpu/memory/gpu of ceil(total requests / one node's allocatable)
  ratio              nodes used / lower bound
  unschedulable      the batch's pods no node could take, by size (CPU / memory / GPUs)
  large pod wait     seconds from a large pod's creation to its binding, or "not placed" after --large-wait
  schedule time      from the first pod's creation to the last pod's PodScheduled (the API server's timestamps)

and deletes the pods. Writes bench/binpack.json and bench/binpack.png (pods per node at the first fill, and pods
left unschedulable at every fill, both profiles).

    .venv/bin/python -m bench.binpack [--nodes 1000] [--rounds 2] [--fills 0.4,0.6,0.8] [--seed 7]
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


def size_of(spec):
    """A pod's size as the tables show it: '16 CPU / 80 GiB' or '4 GPU (20 CPU / 200 GiB)'."""
    cpu = ("%g" % spec["cpu"])
    if spec["gpu"]:
        return "%d GPU (%s CPU / %d GiB)" % (spec["gpu"], cpu, spec["memory"])
    return "%s CPU / %d GiB" % (cpu, spec["memory"])


def unschedulable(pod):
    return any(c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable"
               for c in pod["status"].get("conditions", []))


def settle(profile, want, settle_s, timeout):
    """Until every pod is bound or marked Unschedulable by the scheduler, and nothing was bound for settle_s: the
    pods' final list."""
    deadline = time.time() + timeout
    last_bound, since = -1, time.time()
    while True:
        items = json.loads(kubectl("get", "pods", "-n", NS, "-l", "app=batch", "-o", "json",
                                   timeout="120s").stdout)["items"]
        bound = sum(1 for p in items if p["spec"].get("nodeName"))
        if bound != last_bound:
            last_bound, since = bound, time.time()
        decided = all(p["spec"].get("nodeName") or unschedulable(p) for p in items)
        if len(items) == want and (bound == want or (decided and time.time() - since >= settle_s)):
            return items
        if time.time() > deadline:
            raise SystemExit("%s: %d of %d pods bound, the rest not yet marked Unschedulable, after %ds"
                             % (profile, bound, want, timeout))
        time.sleep(2)


LARGE = {"cpu": {"class": "cpu", "cpu": 16, "memory": 100, "gpu": 0},
         "gpu": {"class": "gpu", "cpu": 20, "memory": 200, "gpu": 4}}


def large_pod_waits(profile, wait_s):
    """One large pod per class, created after the batch: seconds until each is bound, None when not within wait_s."""
    objs = []
    for cls, spec in LARGE.items():
        obj = pod_object(0, spec, profile)
        obj["metadata"].update(name="large-%s" % cls, labels={"app": "large"})
        objs.append(obj)
    apply_list(objs)
    created = time.time()
    waits = {}
    while time.time() - created < wait_s and len(waits) < len(LARGE):
        for p in json.loads(kubectl("get", "pods", "-n", NS, "-l", "app=large", "-o", "json").stdout)["items"]:
            cls = p["metadata"]["name"].split("-", 1)[1]
            if cls not in waits and p["spec"].get("nodeName"):
                done = [c for c in p["status"].get("conditions", []) if c["type"] == "PodScheduled"
                        and c["status"] == "True"]
                waits[cls] = max(0, ts(done[0]["lastTransitionTime"]) - ts(p["metadata"]["creationTimestamp"])) \
                    if done else round(time.time() - created)
        time.sleep(1)
    return dict((cls, waits.get(cls)) for cls in LARGE)


def one_run(profile, pods, names, settle_s=20, large_wait=60, timeout=900):
    kubectl("create", "namespace", NS)
    started = time.time()
    apply_list([pod_object(i, p, profile) for i, p in enumerate(pods)])
    submitted = time.time()
    items = settle(profile, len(pods), settle_s, timeout)
    wall = time.time() - started
    bound = [p for p in items if p["spec"].get("nodeName")]
    created = min(ts(p["metadata"]["creationTimestamp"]) for p in items)
    scheduled = max([ts(c["lastTransitionTime"]) for p in bound for c in p["status"].get("conditions", [])
                     if c["type"] == "PodScheduled" and c["status"] == "True"] or [created])
    per_node = {}
    for p in bound:
        per_node[p["spec"]["nodeName"]] = per_node.get(p["spec"]["nodeName"], 0) + 1
    left = {}
    for p in items:
        if not p["spec"].get("nodeName"):
            size = size_of(pods[int(p["metadata"]["name"].split("-")[1])])
            left[size] = left.get(size, 0) + 1
    waits = large_pod_waits(profile, large_wait)
    kubectl("delete", "namespace", NS, "--wait=true", timeout="600s")
    result = {"profile": profile, "pods": len(pods), "bound": len(bound), "unschedulable": len(pods) - len(bound),
              "unschedulable_by_size": dict(sorted(left.items(), key=lambda kv: -kv[1])),
              "large_pod_wait_s": waits, "wall_s": round(wall, 1), "submit_s": round(submitted - started, 1),
              "schedule_s": scheduled - created, "classes": {}}
    for cls, ns in names.items():
        used = sum(1 for n in ns if per_node.get(n))
        result["classes"][cls] = {"nodes": len(ns), "used": used, "empty": len(ns) - used}
    result["pods_per_node"] = {cls: sorted((per_node.get(n, 0) for n in ns), reverse=True)
                               for cls, ns in names.items()}
    return result


def plot(results, fills, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colours = dict(zip(PROFILES, ("tab:orange", "tab:blue")))
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
    for ax, cls in zip(axes, ("cpu", "gpu")):
        for profile in PROFILES:
            run = [r for r in results if r["profile"] == profile and r["fill"] == fills[0]][-1]
            counts = run["pods_per_node"][cls]
            ax.plot(range(1, len(counts) + 1), counts, color=colours[profile], drawstyle="steps-post",
                    label="%s: %d of %d nodes used" % (profile, run["classes"][cls]["used"], len(counts)))
        size = "Standard_NC24" if cls == "gpu" else "Standard_D15_v2"
        ax.set_title("%s class (%s), fill %.0f %%" % (cls.upper(), size, fills[0] * 100))
        ax.set_xlabel("nodes, fullest first")
        ax.set_ylabel("pods on the node")
        ax.legend()
    ax = axes[2]
    width = 0.35
    for k, profile in enumerate(PROFILES):
        left = [statistics.median(r["unschedulable"] for r in results if r["profile"] == profile and r["fill"] == f)
                for f in fills]
        bars = ax.bar([i + (k - 0.5) * width for i in range(len(fills))], left, width, color=colours[profile],
                      label=profile)
        ax.bar_label(bars)
    ax.set_xticks(range(len(fills)), ["%.0f %%" % (f * 100) for f in fills])
    ax.set_xlabel("fill (share of each class's CPU and GPUs requested)")
    ax.set_ylabel("pods no node could take")
    ax.set_title("pods left unschedulable")
    ax.legend()
    fig.suptitle("kube-scheduler: default profile vs scheduler_binpack (MostAllocated), same seeded batches")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def summarize(results, fills):
    summary = {}
    for fill in fills:
        for profile in PROFILES:
            mine = [r for r in results if r["profile"] == profile and r["fill"] == fill]
            waits = {cls: [r["large_pod_wait_s"][cls] for r in mine] for cls in LARGE}
            summary["%s@%g" % (profile, fill)] = {
                "profile": profile, "fill": fill,
                "used": {cls: statistics.median(r["classes"][cls]["used"] for r in mine) for cls in CLASSES},
                "ratio": {cls: statistics.median(r["classes"][cls]["ratio"] for r in mine) for cls in CLASSES},
                "empty": statistics.median(sum(c["empty"] for c in r["classes"].values()) for r in mine),
                "unschedulable": statistics.median(r["unschedulable"] for r in mine),
                "unschedulable_by_size": mine[-1]["unschedulable_by_size"],
                # a large pod not placed in any round is "not placed"; else the slowest round's wait
                "large_pod_wait_s": {cls: None if any(w is None for w in ws) else max(ws)
                                     for cls, ws in waits.items()},
                "schedule_s": statistics.median(r["schedule_s"] for r in mine),
            }
    return summary


def left_summary(by_size):
    """size_of's counts in a table cell: GPU pods by GPUs, CPU pods as one count with their CPU range."""
    gpu, cpus, n_cpu = {}, [], 0
    for size, n in by_size.items():
        amount, unit = size.split()[:2]
        if unit == "GPU":
            gpu[int(amount)] = gpu.get(int(amount), 0) + n
        else:
            cpus.append(float(amount))
            n_cpu += n
    parts = ["%d x %d-GPU" % (n, g) for g, n in sorted(gpu.items(), reverse=True)]
    if n_cpu:
        parts.append("%d CPU pods of %g-%g CPU" % (n_cpu, min(cpus), max(cpus)))
    return ", ".join(parts)


def table(summary, bounds, fills, nodes, large_wait):
    def wait(v):
        return "not placed in %d s" % large_wait if v is None else "%d s" % v
    lines = ["| fill | profile | CPU nodes used | GPU nodes used | empty nodes | pods left unschedulable | "
             "large pod wait (16 CPU / 4 GPU) |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for fill in fills:
        b = bounds[str(fill)]
        lines.append("| %.0f %% | lower bound | %d | %d | %d of %d | | |" % (
            fill * 100, b["cpu"], b["gpu"], nodes - b["cpu"] - b["gpu"], nodes))
        for profile in PROFILES:
            s = summary["%s@%g" % (profile, fill)]
            sizes = left_summary(s["unschedulable_by_size"])
            lines.append("| %.0f %% | %s | %d (%.2fx) | %d (%.2fx) | %d | %d%s | %s / %s |" % (
                fill * 100, profile, s["used"]["cpu"], s["ratio"]["cpu"], s["used"]["gpu"], s["ratio"]["gpu"],
                s["empty"], s["unschedulable"], " (%s)" % sizes if sizes else "",
                wait(s["large_pod_wait_s"]["cpu"]), wait(s["large_pod_wait_s"]["gpu"])))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--fills", default="0.4,0.6,0.8", help="shares of each class's CPU and GPUs the batch requests")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--settle", type=int, default=20,
                    help="seconds without a bind before the rest count as unschedulable")
    ap.add_argument("--large-wait", type=int, default=60, help="seconds a large pod may wait to be placed")
    ap.add_argument("--keep-nodes", action="store_true", help="leave the benchmark's Nodes registered")
    args = ap.parse_args()
    fills = [float(f) for f in args.fills.split(",") if f]
    names = node_names(args.nodes)
    kubectl("delete", "namespace", NS, "--ignore-not-found", "--wait=true", timeout="600s")
    print("registering %d kwok Nodes (%d cpu, %d gpu)" % (args.nodes, len(names["cpu"]), len(names["gpu"])),
          flush=True)
    ensure_nodes(names)
    results, bounds, workloads = [], {}, {}
    try:
        for fill in fills:
            pods = workload(args.seed, names, fill)
            bound = lower_bound(pods, names)
            bounds[str(fill)], workloads[str(fill)] = bound, len(pods)
            print("fill %.2f: %d pods (seed %d); lower bound %s" % (fill, len(pods), args.seed, bound), flush=True)
            for rnd in range(args.rounds):
                order = PROFILES if rnd % 2 == 0 else PROFILES[::-1]
                for profile in order:
                    r = one_run(profile, pods, names, settle_s=args.settle, large_wait=args.large_wait)
                    r["round"], r["fill"] = rnd + 1, fill
                    for cls, c in r["classes"].items():
                        c["lower_bound"] = bound[cls]
                        c["ratio"] = round(c["used"] / float(bound[cls]), 3) if bound[cls] else None
                    results.append(r)
                    print("fill %.2f round %d %-17s cpu used %4d (x%.2f), gpu used %4d (x%.2f), empty %4d, "
                          "unschedulable %d %s, large pod waits %s; schedule %ds, wall %.0fs" % (
                              fill, rnd + 1, profile, r["classes"]["cpu"]["used"], r["classes"]["cpu"]["ratio"],
                              r["classes"]["gpu"]["used"], r["classes"]["gpu"]["ratio"],
                              sum(c["empty"] for c in r["classes"].values()), r["unschedulable"],
                              r["unschedulable_by_size"], r["large_pod_wait_s"], r["schedule_s"], r["wall_s"]),
                          flush=True)
    finally:
        if not args.keep_nodes:
            kubectl("delete", "nodes", "-l", LABEL, "--wait=false", check=False, timeout="300s")
    summary = summarize(results, fills)
    out = {"nodes": args.nodes, "seed": args.seed, "fills": fills, "pods": workloads, "lower_bound": bounds,
           "large_pods": LARGE, "large_wait_s": args.large_wait, "summary": summary, "runs": results}
    with open(os.path.join(REPO, "bench", "binpack.json"), "w") as f:
        json.dump(out, f, indent=1)
    plot(results, fills, os.path.join(REPO, "bench", "binpack.png"))
    print()
    print(table(summary, bounds, fills, args.nodes, args.large_wait))
    print("wrote bench/binpack.json and bench/binpack.png")


if __name__ == "__main__":
    main()
