"""Benchmark: what a skipped task costs the controller, against a `meta: end_role` task whose condition is false.

ansible-core runs a skipped task like any other: a variable merge in the main process, a forked worker that
evaluates the condition, a result sent back and its callbacks. A meta task is run by the strategy in the main
process, no worker. The roles end with `meta: end_role` on a node that needs nothing more, where each had a skipped
include or task; this measures why. Three plays on every lab host (no task reaches a node: each is skipped or a
meta): no tasks, TASKS skipped `debug` tasks, and TASKS `meta: end_role` tasks whose condition is false, alternated
round after round in this one process. Reports the controller CPU-s (user + sys of ansible-playbook and its
children) each adds per task and host over the empty play, medians; writes bench/skip_cost.json.

    .venv/bin/python -m bench.skip_cost [--rounds 3] [--tasks 20]
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

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INVENTORY = os.path.join(REPO, "inventories", "lab", "hosts.yml")
TASK = {
    "skipped": "- name: skipped %d\n  ansible.builtin.debug:\n    msg: never\n  when: bench_never | default(false)\n",
    "meta": "- name: meta %d\n  ansible.builtin.meta: end_role\n  when: bench_never | default(false)\n",
}


def write_plays(root, tasks):
    """A role per variant (TASKS of its task) and a playbook for each, plus the empty play."""
    for variant, text in TASK.items():
        os.makedirs(os.path.join(root, "roles", variant, "tasks"))
        with open(os.path.join(root, "roles", variant, "tasks", "main.yml"), "w") as f:
            f.write("---\n" + "".join(text % i for i in range(tasks)))
        with open(os.path.join(root, variant + ".yml"), "w") as f:
            f.write("---\n- name: %s\n  hosts: all\n  gather_facts: false\n  roles: [%s]\n" % (variant, variant))
    with open(os.path.join(root, "empty.yml"), "w") as f:
        f.write("---\n- name: empty\n  hosts: all\n  gather_facts: false\n  tasks: []\n")


def cpu_of(root, playbook):
    """Controller CPU-s of one run (user + sys of ansible-playbook and its children)."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_INVENTORY=INVENTORY,
               ANSIBLE_ROLES_PATH=os.path.join(root, "roles"), ANSIBLE_STDOUT_CALLBACK="default")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), playbook], cwd=root,
                          env=env, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit("skip_cost: %s failed:\n%s" % (playbook, proc.stdout[-2000:]))
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def hosts():
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible"), "-i", INVENTORY, "all",
                          "--list-hosts"], capture_output=True, text=True, check=True).stdout
    return len(out.splitlines()) - 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tasks", type=int, default=20)
    args = ap.parse_args()
    if not os.path.exists(INVENTORY):
        raise SystemExit("skip_cost: needs the lab's inventory (make lab)")
    n = hosts()
    root = tempfile.mkdtemp(prefix="kubescale-skip-cost-")
    runs = {"empty": [], "skipped": [], "meta": []}
    try:
        write_plays(root, args.tasks)
        for _round in range(args.rounds):
            for variant in runs:
                runs[variant].append(cpu_of(root, variant + ".yml"))
    finally:
        shutil.rmtree(root)
    med = dict((variant, statistics.median(v)) for variant, v in runs.items())
    per = dict((variant, (med[variant] - med["empty"]) / (args.tasks * n)) for variant in TASK)
    for variant in runs:
        print("%-8s %s  median %.2f CPU-s" % (variant, " ".join("%.2f" % x for x in runs[variant]), med[variant]))
    print("%d hosts x %d tasks: a skipped task %.1f ms per host, a meta end_role (false) %.1f ms (%.0fx)"
          % (n, args.tasks, per["skipped"] * 1000, per["meta"] * 1000, per["skipped"] / per["meta"]))
    with open(os.path.join(REPO, "bench", "skip_cost.json"), "w") as f:
        json.dump(dict(hosts=n, tasks=args.tasks, rounds=args.rounds, cpu_s=runs, median_cpu_s=med,
                       cpu_s_per_task_and_host=per), f, indent=2, sort_keys=True)


if __name__ == "__main__":
    main()
