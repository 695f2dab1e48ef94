"""Benchmark: what the worker roles' variable checks cost the controller per host, before and after.

The rules of arp_sysctl, local_ssd, docker_overlay2 and image_preload (their `check_vars` tasks; their first calls to a
node carry the same rules as `checks`) are evaluated on the controller, in a forked worker per task and host. Two costs
of this tree are in there: every condition asked alone was one Jinja compile (now the conditions of rules that hold
are joined into one expression), and the first kubescale.tuning filter a worker used (image_preload's
image_ref_errors) imported every filter file of the collection with all their module_utils, python-cryptography among
them (now a filter file imports its code at its first call). This runs only those four tasks (`--tags preflight`:
nothing reaches a node) for every lab CPU worker, from a checkout of --baseline and from this tree, alternated round
after round in this one process so both see the same machine. Reports the controller CPU-s (user + sys of
ansible-playbook and its children) per host, their medians and the ratio; writes bench/check_tasks.json.

    .venv/bin/python -m bench.check_tasks --baseline REV [--rounds 5]
"""

import argparse
import json
import os
import statistics
import subprocess

from bench import fleet  # the lab's hosts and a worktree of a revision
from tests.integration import json_report  # the json callback's report, read one way

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PLAYBOOK = """---
- name: The worker roles' variable checks alone
  hosts: kube_node_cpu
  gather_facts: false
  tasks:
    - {name: arp_sysctl, ansible.builtin.import_role: {name: kubescale.tuning.arp_sysctl, tasks_from: sysctl.yml}}
    - {name: local_ssd, ansible.builtin.import_role: {name: kubescale.tuning.local_ssd, tasks_from: converge.yml}}
    - {name: docker_overlay2, ansible.builtin.import_role: {name: kubescale.tuning.docker_overlay2, tasks_from: preflight.yml}}
    - {name: image_preload, ansible.builtin.import_role: {name: kubescale.tuning.image_preload, tasks_from: %s}}
"""
NAME = "bench-check-tasks.yml"


def run(tree, hosts):
    path = os.path.join(tree, "playbooks", NAME)  # beside the class playbooks: their group_vars apply
    # image_preload's checks are in pause.yml in older trees, in converge.yml since its read joined the load
    preload = "pause.yml" if os.path.exists(os.path.join(tree, "roles/image_preload/tasks/pause.yml")) else "converge.yml"
    with open(path, "w") as f:
        f.write(PLAYBOOK % preload)
    try:
        got = fleet.play(tree, path, ["--tags", "preflight", "-l", ",".join(hosts)], measure=True)
    finally:
        os.remove(path)
    checks = sum(1 for _task, _host, res in json_report.results(got["report"])
                 if res.get("action", "").endswith("check_vars"))
    if checks != 4 * len(hosts):
        raise SystemExit("check_tasks: %d check_vars results, want %d" % (checks, 4 * len(hosts)))
    return got["cpu_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="the git revision to compare this checkout with")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    hosts = fleet.hosts_of("kube_node_cpu", fleet.lab_counts({})["kube_node_cpu"])
    base = fleet.worktree(args.baseline)
    cpu = {"baseline": [], "current": []}
    try:
        for r in range(args.rounds):
            for label, tree in (("baseline", base), ("current", REPO)):
                cpu[label].append(run(tree, hosts) / len(hosts))
                print("round %d %-8s %.3f CPU-s per host (4 check tasks)" % (r + 1, label, cpu[label][-1]),
                      flush=True)
    finally:
        subprocess.run(["git", "-C", REPO, "worktree", "remove", "--force", base], check=False)
    med = dict((k, statistics.median(v)) for k, v in cpu.items())
    saved_ms = (med["baseline"] - med["current"]) * 1000
    print("median CPU-s per host: baseline %.3f, current %.3f (%.2fx); %.0f ms less per host, %.0f ms per check task"
          % (med["baseline"], med["current"], med["baseline"] / med["current"], saved_ms, saved_ms / 4))
    with open(os.path.join(REPO, "bench", "check_tasks.json"), "w") as f:
        json.dump(dict(baseline=args.baseline, hosts=len(hosts), cpu_s_per_host=cpu, median=med,
                       saved_ms_per_host=saved_ms), f, indent=1)


if __name__ == "__main__":
    main()
