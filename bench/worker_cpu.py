"""Each forked worker's own CPU per task and host, by action: a revision against this tree, alternated, on the lab.

ansible-core runs every task on every host in a forked worker that templates the task's arguments (compiling each
template afresh), runs the action and, for a module, sends it. That is most of the controller's cost per node, and
the whole-run figure (bench/fleet.py) moves between runs of one tree by more than one task's share. Here
bench/callbacks/worker_cpu.py records each worker's own user+sys CPU from the fork to its result, with its task's
action and name, no profiler in the way; the idempotent class playbook on the lab's nodes of a class (`--group`, the CPU
workers by default; each tree converges the nodes first, unmeasured), rounds alternated, medians per action (or per
task, `--by task`). Writes bench/worker_cpu.json (bench/worker_cpu_<group>.json for another class).
"""

import argparse
import collections
import json
import os
import statistics
import subprocess
import tempfile

from bench import fleet  # the lab's hosts, a worktree of a revision, one measured run

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


GROUP = "kube_node_cpu"


def measure(tree, group, hosts, key="action"):
    """One idempotent run: {action or task: [cpu_s of each task and host]}, and the run's controller CPU-s per node."""
    fleet.run(tree, group, hosts, measure=False)  # the tree's own state on the nodes first
    fd, out = tempfile.mkstemp(prefix="worker-cpu-", suffix=".jsonl")
    os.close(fd)
    try:
        row = fleet.run(tree, group, hosts, measure=True, extra_env=dict(
            ANSIBLE_CALLBACK_PLUGINS=os.path.join(REPO, "bench", "callbacks"), ANSIBLE_CALLBACKS_ENABLED="worker_cpu",
            WORKER_CPU_OUT=out))
        with open(out) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    finally:
        os.remove(out)
    if row["changed"]:
        raise SystemExit("worker_cpu: %s changed %d tasks on its second run" % (tree, row["changed"]))
    by = collections.defaultdict(list)
    for r in rows:
        by[r["action"] if key == "action" else "%s | %s" % (r["action"], r["task"])].append(r["cpu_s"])
    return by, row["cpu_s_per_node"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="the git revision to compare this checkout with")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--group", default=GROUP, choices=sorted(fleet.PLAYBOOKS))
    ap.add_argument("--by", default="action", choices=["action", "task"])
    ap.add_argument("--nodes", type=int, default=None,
                    help="nodes of the class (20 workers by default; a cluster class's lab members)")
    args = ap.parse_args()
    nodes = args.nodes or fleet.MEMBERS.get(args.group, 20)
    if nodes > fleet.MEMBERS.get(args.group, nodes):
        raise SystemExit("worker_cpu: --nodes %d: %s has %d lab members" % (nodes, args.group, fleet.MEMBERS[args.group]))
    counts = fleet.lab_counts({args.group: nodes})
    fleet.lab_up(counts)
    hosts = fleet.hosts_of(args.group, nodes)
    base = fleet.worktree(args.baseline)
    per_action = {"baseline": collections.defaultdict(list), "current": collections.defaultdict(list)}
    per_node = {"baseline": [], "current": []}
    try:
        for r in range(args.rounds):
            for label, tree in (("baseline", base), ("current", REPO)):
                by, node = measure(tree, args.group, hosts, args.by)
                per_node[label].append(node)
                for action, cpus in by.items():
                    per_action[label][action].append(sum(cpus) / len(hosts))  # worker CPU-s per node
                print("round %d %-8s %.2f controller CPU-s per node, workers %.2f of it"
                      % (r + 1, label, node, sum(sum(c) for c in by.values()) / len(hosts)), flush=True)
    finally:
        subprocess.run(["git", "-C", REPO, "worktree", "remove", "--force", base], check=False)
    med = dict((label, dict((a, statistics.median(v)) for a, v in acts.items())) for label, acts in per_action.items())
    width = max([44] + [len(a) for m in med.values() for a in m])
    print("\n%s %10s %10s" % ("worker CPU-s per node, median".ljust(width), "baseline", "current"))
    for action in sorted(set(med["baseline"]) | set(med["current"]), key=lambda a: -med["baseline"].get(a, 0)):
        print("%s %10.3f %10.3f" % (action.ljust(width), med["baseline"].get(action, 0), med["current"].get(action, 0)))
    totals = dict((label, sum(m.values())) for label, m in med.items())
    ratio = totals["baseline"] / totals["current"]
    print("%s %10.3f %10.3f  (%.2fx)" % ("all workers".ljust(width), totals["baseline"], totals["current"], ratio))
    nodes = dict((label, statistics.median(v)) for label, v in per_node.items())
    ratio = nodes["baseline"] / nodes["current"]
    print("%s %10.2f %10.2f  (%.2fx; the whole run, noisier)"
          % ("controller CPU-s per node".ljust(width), nodes["baseline"], nodes["current"], ratio))
    name = "worker_cpu.json" if args.group == GROUP and args.by == "action" else "worker_cpu_%s_%s.json" % (
        args.group, args.by)
    with open(os.path.join(REPO, "bench", name), "w") as f:
        json.dump(dict(baseline=args.baseline, group=args.group, by=args.by, nodes=nodes, rounds=args.rounds, worker_cpu_s_per_node=med,
                       workers_total=totals, controller_cpu_s_per_node=per_node), f, indent=2, sort_keys=True)


if __name__ == "__main__":
    main()
