"""Benchmark: what one class playbook costs the controller per node, before and after, at several fleet sizes.

For each class (a worker class by default) and each size N, on the first N lab nodes of the class:

  idempotent   the class playbook on converged nodes (a re-run to check drift): controller CPU-s per node (user +
               sys of ansible-playbook and the children it waits for, ssh included, as /usr/bin/time counts them),
               wall, tasks and remote module runs per node (from the json callback, counted the way
               ../shared/tools/module_runs.py counts them; check_vars and validate_roles, which run on the
               controller, counted apart)
  first        the class playbook on N freshly created nodes (blank resource disk) - only for --first-sizes

both for this checkout ("current") and for --baseline (a git revision, checked out in a temporary worktree and run
against the same lab inventory), alternated in one run: at each size the baseline converges the nodes and is
measured, then the current tree converges them and is measured, so both see the same nodes and machine. All runs use
one serial batch (kubescale_serial_<class>: ["100%"]): rollout batches are a deployment choice. Writes
bench/fleet.json, a PNG of CPU-s per node against N (bench/fleet.png), and a projection for a 2,500-node class on a
16-core controller:

  CPU-s(N) = a + b * N, fitted on the measured sizes (a: the playbook's fixed cost, b: the cost of one more node);
  controller CPU for 2,500 nodes = a + b * 2500; its wall on 16 cores is at least that divided by 16 (the
  controller is CPU-bound once forks >= 16 keep every core busy; network waits overlap).

    .venv/bin/python -m bench.fleet [--classes kube_node_cpu,kube_node_gpu] [--sizes 5,10,20,40]
                                    [--first-sizes 20] [--baseline REV]
"""

import argparse
import collections
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from lab import nodes as labnodes  # the lab's own node table and removal
from tests.integration import json_report  # the json callback's report, read one way

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PLAYBOOKS = {"kube_node_cpu": "node_cpu.yml", "kube_node_gpu": "node_gpu.yml", "etcd": "etcd.yml",
             "etcd_events": "etcd_events.yml", "kube_control_plane": "control_plane.yml"}
# Actions that run on the controller: module_runs.py's list, plus this collection's controller-side actions (which
# module_runs.py counts as remote runs).
LOCAL = {"set_fact", "assert", "include_tasks", "include_role", "import_tasks", "import_role", "debug", "fail",
         "meta", "include_vars", "validate_argument_spec", "add_host", "group_by", "set_stats", "pause"}
CONTROLLER_ACTIONS = {"kubescale.tuning.check_vars", "kubescale.tuning.validate_roles"}
# Classes whose nodes are members of one cluster: never more than a cluster has - the lab's three members of each
# etcd, and kubeadm's HA control plane of three (the lab starts cp-2 and cp-3 on the same etcd when asked for them).
MEMBERS = {"etcd": 3, "etcd_events": 3, "kube_control_plane": 3}
# One serial batch: the rollout batches are a deployment choice, not a cost of the tunings.
ONE_BATCH = '{"kubescale_serial_%s": ["100%%"]}'


def log(msg):
    print("fleet: " + msg, flush=True)


def class_table():
    """{group: (name prefix, count variable, default, first address, range)} from the lab's own table."""
    return dict((row[0], (row[1], row[2], row[3], row[5], row[6])) for row in labnodes.CLASSES)


def lab_counts(wanted):
    """The node count of every class: at least `wanted`, and never fewer than the lab has now (nor the env says)."""
    table = class_table()
    have = collections.Counter()
    for cname in labnodes.existing_containers():
        name = cname[len(labnodes.PREFIX):]
        for group, row in table.items():
            if name.startswith(row[0] + "-") and name[len(row[0]) + 1:].isdigit():
                have[group] += 1
    return dict((group, max(wanted.get(group, 0), have[group], int(os.environ.get(row[1]) or row[2])))
                for group, row in table.items())


def lab_up(counts):
    """Bring the lab to exactly these counts (settled once by lab_counts, so a recreate never shrinks a class)."""
    env = dict(os.environ)
    for group, row in class_table().items():
        env[row[1]] = str(counts[group])
    subprocess.run([sys.executable, "-m", "lab", "up"], check=True, env=env, cwd=REPO,
                   stdout=subprocess.DEVNULL)


def hosts_of(group, n):
    return ["%s-%d" % (class_table()[group][0], i) for i in range(1, n + 1)]


def recreate(group, n, counts):
    """Remove the first n nodes of the class (container, volume and resource disk) and start them again: fresh VMs."""
    for host in hosts_of(group, n):
        labnodes.remove_node(labnodes.PREFIX + host)
    lab_up(counts)


def worktree(rev):
    path = tempfile.mkdtemp(prefix="kubescale-fleet-")
    os.rmdir(path)
    subprocess.run(["git", "-C", REPO, "worktree", "add", "--detach", "-q", path, rev], check=True)
    coll = os.path.join(path, ".collections", "ansible_collections", "kubescale")
    os.makedirs(coll)
    os.symlink("../../..", os.path.join(coll, "tuning"))
    shutil.copy(os.path.join(REPO, "inventories", "lab", "hosts.yml"), os.path.join(path, "inventories", "lab"))
    os.symlink(os.path.join(REPO, "lab", ".state"), os.path.join(path, "lab", ".state"))  # the lab's SSH key
    return path


def count(report, hosts):
    """Per host: tasks run, tasks skipped (each still a forked worker and a variable merge on the controller), remote
    module runs, controller-side actions (the json callback's report, as it printed it)."""
    tasks, remote, controller = collections.Counter(), collections.Counter(), collections.Counter()
    changed, skipped = collections.Counter(), collections.Counter()
    for _task, host, res in json_report.results(report):
        if host not in hosts:
            continue
        if res.get("skipped"):
            skipped[host] += 1
            continue
        action = res.get("action", "?")
        short = action.rsplit(".", 1)[-1] if action.startswith("ansible.builtin.") else action
        tasks[host] += 1
        changed[host] += bool(res.get("changed"))
        if short in CONTROLLER_ACTIONS:
            controller[host] += 1
        elif short not in LOCAL:
            remote[host] += 1
    n = float(len(hosts))
    return dict(tasks=sum(tasks.values()) / n, skipped=sum(skipped.values()) / n, remote=sum(remote.values()) / n,
                controller_actions=sum(controller.values()) / n, changed=sum(changed.values()))


def play(tree, playbook, argv, measure, extra_env=None):
    """ansible-playbook `playbook` from `tree` with `argv`; with measure, its controller CPU-s (user+sys of it and its
    ssh children), wall and the json callback's report. A failed run stops the benchmark."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(tree, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(tree, ".collections"))
    env.update(extra_env or {})
    if measure:
        env["ANSIBLE_STDOUT_CALLBACK"] = "json"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run([os.path.join(REPO, ".venv", "bin", "ansible-playbook"), playbook] + list(argv), cwd=tree,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-2000:])
        raise SystemExit("bench: %s failed on %s (rc %d)" % (os.path.basename(playbook), tree, proc.returncode))
    if not measure:
        return None
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return dict(cpu_s=cpu, wall_s=wall, report=proc.stdout)


def run(tree, group, hosts, measure, extra_env=None, extra_args=()):
    """One class playbook run from `tree` on `hosts`; with measure, its controller CPU, wall and counts.

    extra_env: ANSIBLE_* settings over ansible.cfg's (bench/ansible_cfg.py's variants); extra_args: more
    ansible-playbook arguments (bench/preload_url.py's tags and variables)."""
    got = play(tree, os.path.join(tree, "playbooks", PLAYBOOKS[group]),
               ["-l", ",".join(hosts), "-e", ONE_BATCH % group] + list(extra_args), measure, extra_env)
    if not measure:
        return None
    out = dict(n=len(hosts), cpu_s=got["cpu_s"], cpu_s_per_node=got["cpu_s"] / len(hosts), wall_s=got["wall_s"])
    out.update(count(got["report"], set(hosts)))
    return out


def fit(points):
    """Least squares a + b*N over [(N, cpu_s)]."""
    n = float(len(points))
    sx = sum(p[0] for p in points)
    sy = sum(p[1] for p in points)
    sxx = sum(p[0] * p[0] for p in points)
    sxy = sum(p[0] * p[1] for p in points)
    den = n * sxx - sx * sx
    b = (n * sxy - sx * sy) / den if den else sy / sx
    a = (sy - b * sx) / n if den else 0.0
    return a, b


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for (group, tree), rows in sorted(results.items()):
        rows = sorted(rows, key=lambda r: r["n"])
        ax.plot([r["n"] for r in rows], [r["cpu_s_per_node"] for r in rows], marker="o",
                linestyle="--" if tree == "baseline" else "-", label="%s %s" % (group, tree))
    ax.set_xlabel("nodes in the run (N)")
    ax.set_ylabel("controller CPU-s per node (idempotent run)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title("kubescale.tuning: controller cost of a re-converge")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--classes", default="kube_node_cpu")
    ap.add_argument("--sizes", default="5,10,20,40")
    ap.add_argument("--first-sizes", default="20", help="sizes also measured on fresh nodes ('' for none)")
    ap.add_argument("--baseline", default="", help="a git revision to compare this checkout with (none by default)")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "fleet"))
    args = ap.parse_args()
    groups = [g for g in args.classes.split(",") if g]
    sizes = sorted(int(s) for s in args.sizes.split(",") if s)
    first = sorted(int(s) for s in args.first_sizes.split(",") if s)
    for g in groups:
        if g not in PLAYBOOKS:
            raise SystemExit("--classes: %r is not one of %s" % (g, ", ".join(sorted(PLAYBOOKS))))
        room = class_table()[g][4]
        if max(sizes + first) > room:
            raise SystemExit("--sizes: the lab has room for %d %s nodes" % (room, g))
        # A cluster's members (etcd, the Events etcd, the control plane) are measured on the members the lab has: a
        # new member is not a node to converge but a cluster to grow.
        members = MEMBERS.get(g)
        if members is not None and max(sizes + first) > members:
            raise SystemExit("--sizes: %s is a cluster of %d lab members; measure N <= %d (the per-node cost is the "
                             "slope between sizes)" % (g, members, members))
    counts = lab_counts(dict((g, max(sizes + first)) for g in groups))
    lab_up(counts)
    trees = [("current", REPO)]
    base = None
    if args.baseline:
        base = worktree(args.baseline)
        trees.insert(0, ("baseline", base))
    results = collections.defaultdict(list)
    firsts = []
    try:
        for g in groups:
            for n in first:
                for label, tree in trees:
                    recreate(g, n, counts)
                    row = run(tree, g, hosts_of(g, n), measure=True)
                    row.update(group=g, tree=label, kind="first")
                    firsts.append(row)
                    log("%-14s %-8s first      N=%-3d %.2f CPU-s/node, %.0f s wall, %.1f tasks, %.1f remote runs/node"
                        % (g, label, n, row["cpu_s_per_node"], row["wall_s"], row["tasks"], row["remote"]))
            for n in sizes:
                # Alternated at each size: the tree converges the nodes (a switch of tree rewrites some files;
                # unmeasured), then its idempotent run is measured, so both trees see the same machine.
                for label, tree in trees:
                    run(tree, g, hosts_of(g, n), measure=False)
                    row = run(tree, g, hosts_of(g, n), measure=True)
                    if row["changed"]:
                        raise SystemExit("fleet: %s %s N=%d changed %d tasks on a converged run"
                                         % (g, label, n, row["changed"]))
                    row.update(group=g, tree=label, kind="idempotent")
                    results[(g, label)].append(row)
                    log("%-14s %-8s idempotent N=%-3d %.2f CPU-s/node, %.0f s wall, %.1f tasks (+%.1f skipped), %.1f"
                        " remote runs/node (+%.1f on the controller)"
                        % (g, label, n, row["cpu_s_per_node"], row["wall_s"], row["tasks"], row["skipped"],
                           row["remote"], row["controller_actions"]))
    finally:
        if base:
            subprocess.run(["git", "-C", REPO, "worktree", "remove", "--force", base], check=False)
    projection = {}
    for (g, label), rows in results.items():
        a, b = fit([(r["n"], r["cpu_s"]) for r in rows])
        total = a + b * 2500
        projection["%s %s" % (g, label)] = dict(
            fixed_cpu_s=a, cpu_s_per_extra_node=b, cpu_s_2500=total, min_wall_s_16_cores=total / 16)
    print()
    print("%-30s %12s %12s %14s %16s %10s" % ("idempotent, per node", "N", "CPU-s/node", "remote runs", "tasks",
                                              "skipped"))
    for (g, label), rows in sorted(results.items()):
        for r in sorted(rows, key=lambda r: r["n"]):
            print("%-30s %12d %12.2f %14.1f %16.1f %10.1f"
                  % (g + " " + label, r["n"], r["cpu_s_per_node"], r["remote"], r["tasks"], r["skipped"]))
    for g in groups:
        if (g, "baseline") in results:
            for cur, old in zip(sorted(results[(g, "current")], key=lambda r: r["n"]),
                                sorted(results[(g, "baseline")], key=lambda r: r["n"])):
                print("%s N=%d: baseline/current CPU-s %.2fx, wall %.2fx, remote runs %.1f -> %.1f"
                      % (g, cur["n"], old["cpu_s"] / cur["cpu_s"], old["wall_s"] / cur["wall_s"], old["remote"],
                         cur["remote"]))
    print()
    for key, p in sorted(projection.items()):
        print("%-30s 2,500 nodes: %.0f controller CPU-s (%.0f + %.3f x N), >= %.0f s wall on 16 cores"
              % (key, p["cpu_s_2500"], p["fixed_cpu_s"], p["cpu_s_per_extra_node"], p["min_wall_s_16_cores"]))
    doc = dict(idempotent=[r for rows in results.values() for r in rows], first=firsts, projection=projection,
               baseline=args.baseline, model="CPU-s(N) = a + b*N least squares; wall >= CPU-s / 16 cores")
    with open(args.out + ".json", "w") as f:
        json.dump(doc, f, indent=2, sort_keys=True)
    plot(results, args.out + ".png")
    log("wrote %s.json and %s.png" % (args.out, args.out))


if __name__ == "__main__":
    main()
