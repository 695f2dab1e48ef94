"""inventories/lab/hosts.yml, the default inventory, from the running nodes."""

import os

from .common import LABEL, PREFIX, REPO, log
from .nodes import CLASSES, INFRA_GROUPS, PARENT_GROUPS, existing_containers, inspect

INVENTORY = os.path.join(REPO, "inventories", "lab", "hosts.yml")


def render_inventory(labelled):
    """The inventory's text from {container name: its labels}: a group per class (children as PARENT_GROUPS says),
    each host with its SSH port, container and address, and kube_node over the two worker classes."""
    groups = {c[0]: {} for c in CLASSES if c[0] not in INFRA_GROUPS}
    for c in sorted(labelled):
        labels = labelled[c]
        if labels[LABEL + ".group"] in INFRA_GROUPS:
            continue
        groups[labels[LABEL + ".group"]][c[len(PREFIX):]] = {
            "ansible_port": int(labels[LABEL + ".ssh-port"]),
            "lab_container": c,
            "lab_ip": labels.get(LABEL + ".ip", ""),
        }
    lines = ["---", "# Written by `make lab` (python3 -m lab up): the lab's nodes. Do not edit; group_vars hold settings.",
             "all:", "  children:"]
    for group, hosts in groups.items():
        lines.append("    %s:" % group)
        lines.append("      hosts:" if hosts else "      hosts: {}")
        for name, hv in hosts.items():
            lines.append("        %s:" % name)
            lines.append("          ansible_port: %d" % hv["ansible_port"])
            lines.append("          lab_container: %s" % hv["lab_container"])
            lines.append("          lab_ip: %s" % hv["lab_ip"])
        children = [child for child, parent in PARENT_GROUPS.items() if parent == group]
        if children:
            lines.append("      children:")
            lines += ["        %s:" % child for child in children]
    lines += ["    kube_node:", "      children:", "        kube_node_cpu:", "        kube_node_gpu:"]
    return "\n".join(lines) + "\n"


def write_inventory():
    text = render_inventory(dict((c, inspect(c)["Config"]["Labels"]) for c in existing_containers()))
    os.makedirs(os.path.dirname(INVENTORY), exist_ok=True)
    tmp = INVENTORY + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, INVENTORY)
    log("wrote %s" % os.path.relpath(INVENTORY, REPO))
