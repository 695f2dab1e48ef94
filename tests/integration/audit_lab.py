"""Helpers for the fleet audit's lab tests: run playbooks/audit.yml, read its report, fingerprint nodes."""

import json
import os
import subprocess

from labnode import REPO, hosts_of, node

ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
           ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"))
AUDITED = "etcd:etcd_events:kube_control_plane:kube_node_cpu:kube_node_gpu"


def lab_hosts(pattern_groups=("etcd", "etcd_events", "kube_control_plane", "kube_node_cpu", "kube_node_gpu",
                              "etcd_kubeadm")):
    return sorted(set(hosts_of(*pattern_groups)))


def fingerprint(name):
    """sha256 over every file under /etc and /var/lib/kubescale of a node (names, modes and contents)."""
    script = ("{ find /etc /var/lib/kubescale -xdev \\( -type f -o -type l \\) -printf '%p %m %l\\n' 2>/dev/null | sort; "
              "find /etc /var/lib/kubescale -xdev -type f -print0 2>/dev/null | sort -z | xargs -0 sha256sum; } "
              "| sha256sum")
    return node(name, "sh", "-c", script).stdout.split()[0]


def audit(report_dir, hosts=AUDITED, *extra):
    """Run playbooks/audit.yml on `hosts`; (process, report document or None, report dir)."""
    proc = subprocess.run(["ansible-playbook", "playbooks/audit.yml", "-e", "fleet_audit_hosts=%s" % hosts,
                           "-e", "fleet_audit_report_dir=%s" % report_dir] + list(extra),
                          cwd=REPO, env=ENV, capture_output=True, text=True, check=False)
    path = os.path.join(str(report_dir), "audit.json")
    doc = None
    if os.path.exists(path):
        with open(path) as f:
            doc = json.load(f)
    return proc, doc, str(report_dir)


def red_nodes(doc):
    return sorted(n for n, v in doc["nodes"].items() if v["status"] == "red")


def red_checks(doc, host):
    return [c for c in doc["nodes"][host]["checks"] if c["status"] == "red"]


def only_red_on(doc, host):
    """The red checks on `host`, the only red node of the report."""
    assert red_nodes(doc) == [host], json.dumps(doc["failing"], indent=1)[:4000]
    return red_checks(doc, host)


def failed_with_report(proc):
    """The run failed on one red node, after writing its report."""
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "red check(s) on 1 node(s), report in" in " ".join(proc.stdout.split()), proc.stdout[-3000:]
