"""Benchmark: what dns_spread costs the controller as the cluster grows, before and after its one module call.

dns_spread reads every Node to count those the DNS pods may run on. It used to do so with kubernetes.core.k8s_info,
so the whole Node list came back as the task's result, through Ansible's JSON, callbacks and variables, into a Jinja
set_fact that called the plan filter; now one kubescale.tuning.dns_spread call reads the Nodes in pages and only the
count leaves it. This measures the idempotent dns_spread run (`playbooks/control_plane.yml -l cp-1 --tags
kubescale_dns_spread`: the argument-spec check, the role's variable check and the API work from the controller) with
the lab's kwok keeping N fake Nodes Ready, for this checkout and --baseline, alternated round after round at each N.

Figures: controller CPU-s per run (user + sys of ansible-playbook and its children, the module processes included)
and wall, the median over the rounds. Writes bench/dns_spread_nodes.json and .png, then puts the lab back to its
LAB_KWOK_NODES (50) Nodes.

    .venv/bin/python -m bench.dns_spread_nodes [--nodes 50,500,2500] [--rounds 3] --baseline REV
"""

import argparse
import json
import os
import statistics
import subprocess

from bench import fleet  # the lab, worktrees and measured runs of bench/fleet.py
from lab import controlplane  # the lab's kwok Nodes
from tests.integration import json_report  # the json callback's report, read one way

ARGS = ["-l", "cp-1", "--tags", "kubescale_dns_spread"]


def set_nodes(total):
    """Exactly `total` kwok Nodes, Ready (one in five of the GPU class, as the lab makes them)."""
    gpu = total // 5
    controlplane.ensure_kwok_nodes(controlplane.build_binaries(), {"kube_node_cpu": total - gpu, "kube_node_gpu": gpu},
                                   timeout=1800)


def changed(report):
    return sum(bool(res.get("changed")) for _task, _host, res in json_report.results(report))


def plot(summary, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, style in (("baseline", "--"), ("current", "-")):
        rows = sorted((int(n), s[label]["cpu_s"]) for n, s in summary.items())
        ax.plot([r[0] for r in rows], [r[1] for r in rows], marker="o", linestyle=style,
                label={"baseline": "kubernetes.core k8s_info + Jinja (before)",
                       "current": "kubescale.tuning.dns_spread (one call)"}[label])
    ax.set_xlabel("Nodes in the cluster (kwok)")
    ax.set_ylabel("controller CPU-s per idempotent run")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title("dns_spread: controller cost against cluster size")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", default="50,500,2500")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", required=True, help="the git revision to compare this checkout with")
    ap.add_argument("--out", default=os.path.join(fleet.REPO, "bench", "dns_spread_nodes"))
    args = ap.parse_args()
    sizes = sorted(int(n) for n in args.nodes.split(",") if n)
    if not sizes or sizes[0] < 1:
        raise SystemExit("--nodes: counts of 1 or more")
    fleet.lab_up(fleet.lab_counts({}))
    base = fleet.worktree(args.baseline)
    trees = [("baseline", base), ("current", fleet.REPO)]
    playbook = os.path.join("playbooks", "control_plane.yml")
    summary = {}
    try:
        for n in sizes:
            set_nodes(n)
            runs = {"baseline": [], "current": []}
            for _label, tree in trees:  # each tree once unmeasured: the same objects, whoever wrote them last
                fleet.play(tree, os.path.join(tree, playbook), ARGS, measure=False)
            for rnd in range(args.rounds):
                for label, tree in trees:
                    got = fleet.play(tree, os.path.join(tree, playbook), ARGS, measure=True)
                    if changed(got["report"]):
                        raise SystemExit("dns_spread_nodes: %s changed %d tasks on a converged run"
                                         % (label, changed(got["report"])))
                    runs[label].append(dict(cpu_s=got["cpu_s"], wall_s=got["wall_s"]))
                    fleet.log("%5d Nodes round %d %-8s %.2f CPU-s, %.1f s wall"
                              % (n, rnd + 1, label, got["cpu_s"], got["wall_s"]))
            summary[str(n)] = dict((label, dict(cpu_s=statistics.median(r["cpu_s"] for r in rows),
                                                wall_s=statistics.median(r["wall_s"] for r in rows), runs=rows))
                                   for label, rows in runs.items())
    finally:
        subprocess.run(["git", "-C", fleet.REPO, "worktree", "remove", "--force", base], check=False)
        set_nodes(int(os.environ.get("LAB_KWOK_NODES", "50")))
    print()
    print("%-8s %16s %16s %8s %14s %14s" % ("Nodes", "before CPU-s", "after CPU-s", "ratio", "before wall", "after wall"))
    for n in sizes:
        s = summary[str(n)]
        s["cpu_ratio"] = s["baseline"]["cpu_s"] / s["current"]["cpu_s"]
        before, after = s["baseline"], s["current"]
        row = (n, before["cpu_s"], after["cpu_s"], s["cpu_ratio"], before["wall_s"], after["wall_s"])
        print("%-8d %16.2f %16.2f %7.2fx %13.1fs %13.1fs" % row)
    with open(args.out + ".json", "w") as f:
        json.dump(dict(baseline=args.baseline, rounds=args.rounds, args=ARGS, nodes=summary), f, indent=2,
                  sort_keys=True)
    plot(summary, args.out + ".png")
    fleet.log("wrote %s.json and %s.png" % (args.out, args.out))


if __name__ == "__main__":
    main()
