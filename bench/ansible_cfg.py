"""Benchmark: which ansible.cfg connection and execution settings pay on a fleet re-converge.

The house ansible.cfg sets pipelining, SSH ControlPersist (300 s), the linear strategy, forks = 25 and a 10 ms
internal poll interval. Each is kept only if the numbers say so: this measures the idempotent class playbook (a
drift check, the run a fleet repeats most) on the first N lab nodes of a class with the house settings and with one
setting changed at a time, the variants alternated round after round in one run so every variant sees the same nodes
and machine:

  house              ansible.cfg as it is
  no-pipelining      ANSIBLE_PIPELINING=False (each module is copied to the node, then run: more SSH round trips)
  no-controlpersist  every SSH operation opens its own connection (ControlMaster=no)
  free               ANSIBLE_STRATEGY=free (each host runs ahead, no waiting for the slowest at every task)
  forks-N/2          half as many forks as nodes, so the run queues hosts
  no-inject-facts    ANSIBLE_INJECT_FACT_VARS=False (facts only under ansible_facts, not also copied into every
                     host's top-level variables at every task; the roles read ansible_facts['...'] either way)
  poll-1ms           internal_poll_interval = 0.001, ansible-core's default: how often the strategy, waiting for
                     the forked workers, looks for results and dead workers (every worker's exit code at each look).
                     It has no environment variable: the variant is an ansible.cfg beside the house one (so its
                     relative paths resolve the same), removed afterwards

Figures per variant: controller CPU-s per node (user + sys of ansible-playbook and its ssh children), wall, the
median over the rounds, and the ratio to house. Fact caching is not a variant: the class playbooks gather no facts
(gather_facts: false, gathering = explicit), so there is nothing to cache. Writes bench/ansible_cfg.json.

    .venv/bin/python -m bench.ansible_cfg [--class kube_node_cpu] [--nodes 10] [--rounds 2]
"""

import argparse
import json
import os
import statistics

from bench import fleet  # the same lab sizing, run and counting as bench/fleet.py

# [defaults] settings that have no environment variable: the variant runs with a copy of ansible.cfg that sets them.
CFG_VARIANTS = {"poll-1ms": ("internal_poll_interval", "0.001")}
SSH_NO_PERSIST = "-o ControlMaster=no -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -o LogLevel=ERROR"


def variants(nodes):
    return [
        ("house", {}),
        ("no-pipelining", {"ANSIBLE_PIPELINING": "False"}),
        ("no-controlpersist", {"ANSIBLE_SSH_ARGS": SSH_NO_PERSIST}),
        ("free", {"ANSIBLE_STRATEGY": "free"}),
        ("forks-%d" % max(1, nodes // 2), {"ANSIBLE_FORKS": str(max(1, nodes // 2))}),
        ("no-inject-facts", {"ANSIBLE_INJECT_FACT_VARS": "False"}),
    ] + [(name, {"ANSIBLE_CONFIG": cfg_path(name)}) for name in CFG_VARIANTS]


def cfg_path(name):
    return os.path.join(fleet.REPO, ".bench-ansible-%s.cfg" % name)


def write_cfg_variants():
    """For each CFG_VARIANTS entry: the house ansible.cfg with its [defaults] key set to the variant's value."""
    with open(os.path.join(fleet.REPO, "ansible.cfg")) as f:
        house = f.read().splitlines()
    for name, (key, value) in CFG_VARIANTS.items():
        lines = [line for line in house if not line.replace(" ", "").startswith(key + "=")]
        lines.insert(lines.index("[defaults]") + 1, "%s = %s" % (key, value))
        with open(cfg_path(name), "w") as f:
            f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--class", dest="group", default="kube_node_cpu")
    ap.add_argument("--nodes", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(fleet.REPO, "bench", "ansible_cfg.json"))
    args = ap.parse_args()
    if args.group not in fleet.PLAYBOOKS:
        raise SystemExit("--class: %r is not one of %s" % (args.group, ", ".join(sorted(fleet.PLAYBOOKS))))
    if not 1 <= args.nodes <= fleet.class_table()[args.group][4]:
        room = fleet.class_table()[args.group][4]
        raise SystemExit("--nodes: the lab has room for 1 to %d %s nodes" % (room, args.group))
    counts = fleet.lab_counts({args.group: args.nodes})
    fleet.lab_up(counts)
    hosts = fleet.hosts_of(args.group, args.nodes)
    fleet.run(fleet.REPO, args.group, hosts, measure=False)  # converge once; every measured run is idempotent
    rows = {name: [] for name, _env in variants(args.nodes)}
    write_cfg_variants()
    try:
        for rnd in range(args.rounds):
            for name, env in variants(args.nodes):
                row = fleet.run(fleet.REPO, args.group, hosts, measure=True, extra_env=env)
                if row["changed"]:
                    raise SystemExit("ansible_cfg: %s changed %d tasks on a converged run" % (name, row["changed"]))
                rows[name].append(row)
                fleet.log("round %d %-18s %.2f CPU-s/node, %.1f s wall"
                          % (rnd + 1, name, row["cpu_s_per_node"], row["wall_s"]))
    finally:
        for name in CFG_VARIANTS:
            os.unlink(cfg_path(name))
    summary = {}
    for name, runs in rows.items():
        summary[name] = dict(cpu_s_per_node=statistics.median(r["cpu_s_per_node"] for r in runs),
                             wall_s=statistics.median(r["wall_s"] for r in runs), runs=runs)
    house = summary["house"]
    print()
    print("%-20s %12s %10s %14s %10s" % ("%s, N=%d" % (args.group, args.nodes), "CPU-s/node", "vs house", "wall s",
                                         "vs house"))
    for name, s in summary.items():
        s["cpu_vs_house"] = s["cpu_s_per_node"] / house["cpu_s_per_node"]
        s["wall_vs_house"] = s["wall_s"] / house["wall_s"]
        print("%-20s %12.2f %9.2fx %14.1f %9.2fx" % (name, s["cpu_s_per_node"], s["cpu_vs_house"], s["wall_s"],
                                                     s["wall_vs_house"]))
    with open(args.out, "w") as f:
        json.dump(dict(group=args.group, nodes=args.nodes, rounds=args.rounds, variants=summary), f, indent=2,
                  sort_keys=True)
    fleet.log("wrote %s" % args.out)


if __name__ == "__main__":
    main()
