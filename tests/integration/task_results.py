"""What tests/integration/site_twice.sh asks of the task results its callback wrote (callbacks/task_results.py):

    python3 tests/integration/task_results.py compare CHECK REAL
        --check predicted the real run task by task: on every host, the same tasks in the same order with the same
        status (ok, changed, skipped, failed); every difference is printed, the run fails on any.
    python3 tests/integration/task_results.py expect REAL EXPECTED INVENTORY_JSON
        the first run on a fresh lab changed what it must (EXPECTED: tests/integration/first_run_changes.yml), on
        every host of each entry's group (INVENTORY_JSON: `ansible-inventory --list`).
    python3 tests/integration/task_results.py slowest RESULTS [N]
        where a run's time went: the N (10) tasks that took longest, over all their starts (a rolling play starts a
        task once per batch: "x3").
"""

import difflib
import json
import re
import sys

import yaml

# A task named "X (check mode...)" is X's twin for check mode: the roles do one step one way in check mode (systemd
# cannot be asked about a unit not installed yet; the SSD is not mounted yet) and another way for real.
TWIN = re.compile(r"\s*\(check mode\b[^)]*\)$")


def read(path):
    """{host: [(play, task file, step, status), ...]} in the order the run reported them. A step is a task, or a task
    and its check-mode twin right after it in the same file (TWIN): one step, whose status is the one of the two that
    ran (skipped when neither did)."""
    out = {}
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            key = (r["play"], r["path"].rsplit(":", 1)[0], TWIN.sub("", r["task"]))
            twin = bool(TWIN.search(r["task"]))
            steps = out.setdefault(r["host"], [])
            if twin and steps and steps[-1][0] == key and not steps[-1][2]:
                ran = steps[-1][1] if steps[-1][1] != "skipped" else r["status"]
                steps[-1] = (key, ran, True)
            else:
                steps.append((key, r["status"], False))
    return dict((h, [k + (status,) for k, status, _twin in steps]) for h, steps in out.items())


def differences(check, real):
    """Lines saying where --check and the real run differ, per host; none when they agree task by task."""
    out = []
    for host in sorted(set(check) | set(real)):
        a = ["%s | %s | %s: %s" % t for t in check.get(host, [])]
        b = ["%s | %s | %s: %s" % t for t in real.get(host, [])]
        if a != b:
            out.append("%s:" % host)
            out += ["  " + d for d in difflib.unified_diff(a, b, "check", "real", n=0, lineterm="")
                    if not d.startswith(("---", "+++", "@@"))]
    return out


def hosts_of(inventory, group):
    """Every host of a group and of its children, from `ansible-inventory --list`."""
    seen, todo = set(), [group]
    hosts = set()
    while todo:
        g = todo.pop()
        if g in seen:
            continue
        seen.add(g)
        hosts.update((inventory.get(g) or {}).get("hosts") or [])
        todo += (inventory.get(g) or {}).get("children") or []
    return hosts


def missing(real, expected, inventory):
    """Each (group, task) the first run had to change on a host where it did not."""
    out = []
    for entry in expected:
        hosts = hosts_of(inventory, entry["group"])
        if not hosts:
            out.append("%s: no host in the inventory" % entry["group"])
        for host in sorted(hosts):
            # a role's task is reported as "<role> : <name>"
            statuses = [s for _p, _path, task, s in real.get(host, [])
                        if task == entry["task"] or task.endswith(" : " + entry["task"])]
            if "changed" not in statuses:
                seen = "/".join(statuses) or "not run"
                out.append("%s: %r was %s, not changed (%s)" % (host, entry["task"], seen, entry["why"]))
    return out


def slowest(path, count=10):
    """The tasks that took longest, as lines: their seconds, the task, its file. A task's seconds are, for each time it
    started (once per batch in a rolling play), the seconds until its last host answered, added up over its starts."""
    runs = {}  # (task, its start) -> seconds until its last host answered
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            key = ((r["play"], r["task"], r["path"]), r.get("start", 0))
            runs[key] = max(runs.get(key, 0.0), float(r.get("seconds", 0.0)))
    tasks = {}  # task -> [seconds, starts]
    for (task, _start), secs in runs.items():
        total = tasks.setdefault(task, [0.0, 0])
        total[0] += secs
        total[1] += 1
    ranked = sorted(tasks.items(), key=lambda kv: -kv[1][0])[:count]
    lines = []
    for (play, task, path), (secs, starts) in ranked:
        times = " x%d" % starts if starts > 1 else ""
        lines.append("%7.1f s  %s | %s (%s)%s" % (secs, play, task, path.rsplit("/roles/", 1)[-1], times))
    return lines


def main(argv):
    if len(argv) in (2, 3) and argv[0] == "slowest":
        print("\n".join(slowest(argv[1], int(argv[2]) if len(argv) == 3 else 10)))
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        found = differences(read(argv[1]), read(argv[2]))
        if found:
            print("site: --check did not predict the real run task by task (- check, + real run):", file=sys.stderr)
            print("\n".join(found), file=sys.stderr)
            return 1
        print("site: --check predicted the real run task by task (%d task results)"
              % sum(len(v) for v in read(argv[2]).values()))
        return 0
    if len(argv) == 4 and argv[0] == "expect":
        with open(argv[2]) as f:
            expected = yaml.safe_load(f)
        with open(argv[3]) as f:
            inventory = json.load(f)
        found = missing(read(argv[1]), expected, inventory)
        if found:
            print("site: the first run on a fresh lab did not change what it must:", file=sys.stderr)
            print("\n".join(found), file=sys.stderr)
            return 1
        print("site: the first run changed what it must (%d tunings)" % len(expected))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
