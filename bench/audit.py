"""Benchmark: what playbooks/audit.yml costs the controller per node, on the lab.

Runs the read-only audit over the lab's audited nodes (all classes) `--rounds` times, as a user runs it
(ansible-playbook, the collection's ansible.cfg: forks 25, pipelining, ControlPersist), with
ANSIBLE_STDOUT_CALLBACK=json to count what ran on each node. Reports per node: controller CPU seconds (user+sys of
ansible-playbook and its ssh children), remote module runs and tasks, and the wall time of the run; then the same
with fleet_audit_measure_latency (an fdatasync measurement on every SSD).

The projection to a fleet assumes the controller's CPU is the limit: CPU-s per node x nodes / cores.

    .venv/bin/python -m bench.audit [--rounds 3] [--min-nodes 20]
"""

import argparse
import collections
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

from tests.integration import json_report  # the json callback's report, read one way

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")
# Controller-side actions: they run no module on the node.
LOCAL = {"set_fact", "assert", "include_tasks", "include_role", "import_tasks", "import_role", "debug", "fail",
         "meta", "validate_argument_spec", "kubescale.tuning.audit_report"}


def audited_nodes():
    with open(HOSTS) as f:
        children = yaml.safe_load(f)["all"]["children"]
    names = set()
    for group in ("etcd", "etcd_events", "kube_control_plane", "kube_node_cpu", "kube_node_gpu", "etcd_kubeadm"):
        names |= set((children.get(group) or {}).get("hosts") or {})
    return sorted(names)


def screenshot(html, png):
    """The report as a browser shows it (Debian's headless Chromium), for the README."""
    chromium = shutil.which("chromium")
    if not chromium:
        return None
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--user-data-dir=" + profile, "--window-size=1280,1500", "--screenshot=" + png,
                        "file://" + html], capture_output=True, check=False, timeout=120)
    return png if os.path.exists(png) else None


def one_run(extra):
    out_dir = tempfile.mkdtemp(prefix="kubescale-audit-bench-")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="json",
               ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(["ansible-playbook", "playbooks/audit.yml", "-e", "fleet_audit_report_dir=" + out_dir]
                          + extra, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        sys.exit("audit failed (the lab must be converged and green):\n" + proc.stdout[-3000:] + proc.stderr[-2000:])
    tasks, remote = collections.Counter(), collections.Counter()
    for _task, host, res in json_report.ran(proc.stdout):
        if host == "localhost":
            continue
        tasks[host] += 1
        action = res.get("action", "")
        if action.rsplit(".", 1)[-1] not in LOCAL and action not in LOCAL:
            remote[host] += len(res["results"]) if isinstance(res.get("results"), list) else 1
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    with open(os.path.join(out_dir, "audit.json")) as f:
        totals = json.load(f)["totals"]
    return {"cpu_s": cpu, "wall_s": wall, "tasks": tasks, "remote": remote, "totals": totals,
            "html": os.path.join(out_dir, "audit.html")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-nodes", type=int, default=20)
    args = parser.parse_args()
    nodes = audited_nodes()
    if len(nodes) < args.min_nodes:
        sys.exit("the lab has %d audited nodes, fewer than --min-nodes %d (LAB_CPU_NODES=%d make site)"
                 % (len(nodes), args.min_nodes, 2 + args.min_nodes - len(nodes)))
    rows = {}
    # With the measurement the lab's verdict is red (20 loop devices on one shared VM disk measured at once): the
    # bench measures the cost, so that run only reports.
    measured = ["-e", "fleet_audit_measure_latency=true", "-e", "fleet_audit_fail_on_red=false"]
    for name, extra in (("audit", []), ("audit + fdatasync", measured)):
        runs = [one_run(extra) for _round in range(args.rounds)]
        n = len(nodes)
        cpu = statistics.median(r["cpu_s"] for r in runs) / n
        wall = statistics.median(r["wall_s"] for r in runs)
        remote = statistics.median(statistics.median(r["remote"][h] for h in nodes) for r in runs)
        tasks = statistics.median(statistics.median(r["tasks"][h] for h in nodes) for r in runs)
        rows[name] = {"nodes": n, "cpu_s_per_node": round(cpu, 3), "wall_s": round(wall, 1),
                      "remote_module_runs_per_node": remote, "tasks_per_node": tasks,
                      "projection_2500_nodes_16_cores_s": round(cpu * 2500 / 16, 0),
                      "totals": runs[-1]["totals"]}
        if extra:
            rows[name]["screenshot"] = screenshot(runs[-1]["html"], os.path.join(REPO, "bench", "audit_report.png"))
    print("Fleet audit on %d lab nodes, median of %d runs" % (len(nodes), args.rounds))
    print("%-18s %14s %8s %18s %10s %28s" % ("", "CPU-s / node", "wall s", "module runs / node", "tasks",
                                             "2,500 nodes, 16 cores: CPU s"))
    for name, r in rows.items():
        print("%-18s %14.3f %8.1f %18s %10s %28.0f" % (name, r["cpu_s_per_node"], r["wall_s"],
                                                       r["remote_module_runs_per_node"], r["tasks_per_node"],
                                                       r["projection_2500_nodes_16_cores_s"]))
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
