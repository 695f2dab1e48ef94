"""Benchmark: one sysctl_profile call vs an ansible.posix.sysctl loop, idempotent re-runs over SSH.

Runs against the lab's kube_node_cpu group (start 20 of them: `make bench` does
`LAB_CPU_NODES=20 make lab`). Both variants set the same 6 ARP keys (ipv4 + ipv6), converge once,
then their idempotent re-runs alternate ROUNDS times in this one process, so both see the same
machine load. Reports median wall time, controller CPU (user+sys of ansible-playbook and all its
children), their ratios, and module executions per host.

    .venv/bin/python -m bench.sysctl_one_call [--rounds 7] [--limit kube_node_cpu]
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from tests.integration import json_report  # the json callback's report, read one way

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEYS = {
    "net.ipv4.neigh.default.gc_thresh1": 80000,
    "net.ipv4.neigh.default.gc_thresh2": 90000,
    "net.ipv4.neigh.default.gc_thresh3": 100000,
    "net.ipv6.neigh.default.gc_thresh1": 80000,
    "net.ipv6.neigh.default.gc_thresh2": 90000,
    "net.ipv6.neigh.default.gc_thresh3": 100000,
}
PLAY_HEAD = """---
- name: bench
  hosts: "{{ bench_hosts }}"
  gather_facts: false
  vars:
    bench_keys: %s
  tasks:
""" % json.dumps(KEYS)
ONE_CALL = PLAY_HEAD + """    - name: one sysctl_profile call
      kubescale.tuning.sysctl_profile:
        file: /etc/sysctl.d/90-bench-profile.conf
        settings: "{{ bench_keys }}"
"""
POSIX_LOOP = PLAY_HEAD + """    - name: ansible.posix.sysctl per key
      ansible.posix.sysctl:
        name: "{{ item.key }}"
        value: "{{ item.value }}"
        sysctl_file: /etc/sysctl.d/90-bench-posix.conf
        sysctl_set: false
        reload: false
      loop: "{{ bench_keys | dict2items }}"
"""


def run(playbook, hosts):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"),
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([os.path.join(REPO, ".venv/bin/ansible-playbook"), playbook, "-e", "bench_hosts=" + hosts],
                          cwd=REPO, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit("bench: %s failed:\n%s\n%s" % (playbook, proc.stdout[-3000:], proc.stderr[-3000:]))
    stats = json_report.stats(proc.stdout)
    executions = {}
    for _task, host, res in json_report.results(proc.stdout):
        executions[host] = executions.get(host, 0) + len(res.get("results", [res]))
    changed = sum(s["changed"] for s in stats.values())
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "hosts": len(stats), "changed": changed,
            "exec_per_host": statistics.mean(executions.values()) if executions else 0}


def med(results, key):
    return statistics.median(r[key] for r in results)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--limit", default="kube_node_cpu")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="kubescale-bench-")
    variants = {}
    for name, text in (("sysctl_profile (1 call)", ONE_CALL), ("ansible.posix.sysctl loop", POSIX_LOOP)):
        path = os.path.join(tmp, name.split()[0].replace(".", "_") + ".yml")
        with open(path, "w") as f:
            f.write(text)
        variants[name] = path
    print("bench: converging both variants once on %s" % args.limit, flush=True)
    for path in variants.values():
        run(path, args.limit)
    samples = {name: [] for name in variants}
    for i in range(args.rounds):
        order = list(variants) if i % 2 == 0 else list(reversed(variants))  # alternate who goes first
        for name in order:
            r = run(variants[name], args.limit)
            if r["changed"]:
                sys.exit("bench: %s re-run was not idempotent (changed=%d)" % (name, r["changed"]))
            samples[name].append(r)
    (a, sa), (b, sb) = samples.items()
    print("\nidempotent re-run, %d hosts, %d alternated rounds (median):" % (sa[0]["hosts"], args.rounds))
    print("%-28s %9s %9s %16s" % ("variant", "wall s", "ctrl CPU s", "modules / host"))
    for name, rs in samples.items():
        print("%-28s %9.2f %9.2f %16.1f" % (name, med(rs, "wall"), med(rs, "cpu"), med(rs, "exec_per_host")))
    print("\nratio (%s / %s): wall %.2fx, controller CPU %.2fx"
          % (b, a, med(sb, "wall") / med(sa, "wall"), med(sb, "cpu") / med(sa, "cpu")))


if __name__ == "__main__":
    main()
