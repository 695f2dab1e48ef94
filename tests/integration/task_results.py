"""What tests/integration/site_twice.sh asks of the task results its callback wrote (callbacks/task_results.py):

    python3 tests/integration/task_results.py compare CHECK REAL
        --check predicted the real run task by task: on every host, the same tasks in the same order with the same
        status (ok, changed, skipped, failed); every difference is printed, the run fails on any.
    python3 tests/integration/task_results.py expect REAL EXPECTED INVENTORY_JSON
        the first run on a fresh lab changed what it must (EXPECTED: tests/integration/first_run_changes.yml), on
        every host of each entry's group (INVENTORY_JSON: `ansible-inventory --list`).
"""

import difflib
import json
import sys

import yaml


def read(path):
    """{host: [(play, task path, task name, status), ...]} in the order the run reported them."""
    out = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                out.setdefault(r["host"], []).append((r["play"], r["path"], r["task"], r["status"]))
    return out


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
            statuses = [s for _p, _path, task, s in real.get(host, []) if task == entry["task"]]
            if "changed" not in statuses:
                seen = "/".join(statuses) or "not run"
                out.append("%s: %r was %s, not changed (%s)" % (host, entry["task"], seen, entry["why"]))
    return out


def main(argv):
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
