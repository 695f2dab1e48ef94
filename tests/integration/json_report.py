"""The report Ansible's json stdout callback prints (ANSIBLE_STDOUT_CALLBACK=json), read one way by every test that
runs ansible or ansible-playbook with it."""

import json

PREFIX = "kubescale.tuning."


def results(stdout):
    """[(task, host, result), ...] in the order the run reported them, over every play. `task` is the name Ansible
    prints, without the collection's prefix: "role : task" for a role's task."""
    return [(task["task"]["name"].replace(PREFIX, "", 1), host, result)
            for play in json.loads(stdout)["plays"] for task in play["tasks"]
            for host, result in task["hosts"].items()]


def ran(stdout):
    """results(), less the tasks a host skipped."""
    return [r for r in results(stdout) if not r[2].get("skipped")]


def stats(stdout):
    """The recap: {host: {"ok": n, "changed": n, ...}}."""
    return json.loads(stdout)["stats"]


def first(stdout, host):
    """The first result on `host`: a module's own run (`ansible -m`, a one-task playbook)."""
    return next(result for _task, h, result in results(stdout) if h == host)
