"""The lab's nodes for the integration tests: one command on a node (its container), and the lab inventory's groups,
hosts and addresses (inventories/lab/hosts.yml, as `make lab` wrote it)."""

import os
import subprocess

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")


def node(name, *argv, check=True, stdin=None):
    """Run argv in lab node `name`; with check, a non-zero exit fails the test with the command's stderr."""
    interactive = ["-i"] if stdin is not None else []
    proc = subprocess.run(["docker", "exec"] + interactive + ["kslab-" + name] + list(argv), capture_output=True,
                          text=True, check=False, input=stdin)
    if check and proc.returncode != 0:
        raise AssertionError("%s: %s failed: %s" % (name, " ".join(argv), proc.stderr))
    return proc


def lab_groups():
    """The lab inventory's groups: {name: the group's YAML}."""
    with open(HOSTS) as f:
        return yaml.safe_load(f)["all"]["children"]


def hosts_of(*groups):
    """The hosts listed in each group itself (not in its children), sorted, one group after the other."""
    inventory = lab_groups()
    out = []
    for group in groups:
        out += sorted((inventory.get(group) or {}).get("hosts") or {})
    return out


def lab_ip(host):
    """A lab node's address on the lab network (its lab_ip in the inventory)."""
    for group in lab_groups().values():
        if host in ((group or {}).get("hosts") or {}):
            return group["hosts"][host]["lab_ip"]
    raise KeyError(host)
