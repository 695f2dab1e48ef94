"""Benchmark: kubescale.tuning.disk_latency vs fio with etcd's recipe, on the same directory.

    fio --rw=write --ioengine=sync --fdatasync=1 --directory=DIR --size=22m --bs=2300

Both run alternately ROUNDS times in this one process (same disk, same load). Reports both fdatasync
p99s (median over rounds), their ratio, and the module's run time. Targets: p99 within 25% of fio's,
module run time <= 10 s.

    .venv/bin/python -m bench.disk_latency_vs_fio [--dir /var/tmp/kubescale-bench] [--rounds 5]

The module runs as Ansible runs it (ansible localhost -m kubescale.tuning.disk_latency), so its run
time includes Ansible's own start-up.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from tests.integration import json_report  # the json callback's report, read one way

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_module(directory):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"), ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    t0 = time.perf_counter()
    proc = subprocess.run([os.path.join(REPO, ".venv/bin/ansible"), "localhost", "-i", "localhost,", "-c", "local",
                           "-e", "ansible_python_interpreter=/usr/bin/python3", "-m", "kubescale.tuning.disk_latency",
                           "-a", "path=%s max_p99_ms=0" % directory], cwd=REPO, env=env, capture_output=True,
                          text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit("bench: disk_latency failed:\n%s\n%s" % (proc.stdout[-2000:], proc.stderr[-2000:]))
    result = json_report.first(proc.stdout, "localhost")["latency"]
    return result["p99_ms"], result["p50_ms"], wall


def run_fio(directory):
    proc = subprocess.run(["fio", "--name=etcd-bench", "--directory=" + directory, "--rw=write", "--ioengine=sync",
                           "--fdatasync=1", "--size=22m", "--bs=2300", "--output-format=json"],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit("bench: fio failed: %s" % proc.stderr)
    job = json.loads(proc.stdout)["jobs"][0]
    pct = job["sync"]["lat_ns"]["percentile"]
    for name in os.listdir(directory):
        if name.startswith("etcd-bench"):
            os.remove(os.path.join(directory, name))
    return pct["99.000000"] / 1e6, pct["50.000000"] / 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default="/var/tmp/kubescale-bench")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if shutil.which("fio") is None:
        sys.exit("bench: fio is not installed (apt-get install fio)")
    os.makedirs(args.dir, exist_ok=True)
    mod, fio = [], []
    for i in range(args.rounds):
        pair = [("module", run_module), ("fio", run_fio)]
        for name, fn in (pair if i % 2 == 0 else reversed(pair)):  # alternate who goes first
            (mod if name == "module" else fio).append(fn(args.dir))
    m99 = statistics.median(r[0] for r in mod)
    f99 = statistics.median(r[0] for r in fio)
    m50 = statistics.median(r[1] for r in mod)
    f50 = statistics.median(r[1] for r in fio)
    wall = statistics.median(r[2] for r in mod)
    print("fdatasync latency on %s, %d alternated rounds (median):" % (args.dir, args.rounds))
    print("%-24s %10s %10s" % ("", "p50 ms", "p99 ms"))
    print("%-24s %10.3f %10.3f" % ("kubescale.disk_latency", m50, m99))
    print("%-24s %10.3f %10.3f" % ("fio (etcd recipe)", f50, f99))
    print("\np99 ratio module/fio: %.2f (target 0.75-1.25); p50 ratio %.2f" % (m99 / f99, m50 / f50))
    print("module run time (ansible localhost -m, median): %.2f s (target <= 10 s)" % wall)


if __name__ == "__main__":
    main()
