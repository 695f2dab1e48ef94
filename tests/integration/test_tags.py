"""Against the converged lab: the site playbook's tags run one tuning, or only the read-only preflight, fleet-wide.

`--tags kubescale_<role>` runs that role's tasks and nothing else; `--tags preflight` runs the variable checks of
every role (and the argument-spec validation) and nothing that changes a node. Both change nothing on a converged lab.
"""

import glob
import os
import re
import subprocess

import json_report
import pytest
import yaml
from labnode import node

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")
# ansible-core's validation task at the start of a role, and the worker playbooks' one task that validates all their
# roles (kubescale.tuning.validate_roles; their roles are imported with rolespec_validate: false)
SPEC = re.compile(r"^(\w+ : Validating arguments against arg spec '\w+'|Check every role's variables against its "
                  r"argument spec)")

pytestmark = pytest.mark.usefixtures("lab")


def run_json(*args, rc=0, report=None):
    proc = subprocess.run(
        ["ansible-playbook", "-i", HOSTS, *args], cwd=REPO, capture_output=True, text=True, check=False,
        env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="json"))
    assert proc.returncode == rc, (proc.stdout[-3000:], proc.stderr[-2000:])
    if report is not None:
        report.update(results=json_report.results(proc.stdout))
    return [(task, host, res.get("changed", False)) for task, host, res in json_report.ran(proc.stdout)]


def validate_task_names():
    """The roles' checks: every task of a validate.yml, and a task tagged preflight in another tasks file."""
    names = set()
    for path in glob.glob(os.path.join(REPO, "roles", "*", "tasks", "*.yml")):
        role = path.split(os.sep)[-3]
        whole = os.path.basename(path) == "validate.yml"
        names.update("%s : %s" % (role, t["name"]) for t in yaml.safe_load(open(path)) or []
                     if whole or "preflight" in (t.get("tags") or []))
    return names


def preflight_includes():
    """The class playbooks' include_role tasks tagged preflight (the node's runtime's role): they run under
    --tags preflight so the included role's checks do, and are no check of their own."""
    names = set()
    for path in glob.glob(os.path.join(REPO, "playbooks", "*.yml")):
        for play in yaml.safe_load(open(path)) or []:
            for task in play.get("tasks") or []:
                if "ansible.builtin.include_role" in task and "preflight" in (task.get("tags") or []):
                    names.add(task["name"])
    return names


def test_one_role_tag_runs_that_tuning_only():
    ran = run_json("playbooks/site.yml", "--tags", "kubescale_arp_sysctl")
    assert ran
    # Ansible tags each role's argument-spec validation `always`: it runs for every role (and changes nothing)
    others = {n for n, _h, _c in ran if not n.startswith("arp_sysctl : ") and not SPEC.match(n)}
    assert others == set()
    # every class runs arp_sysctl: the ARP settings were checked on every node of the lab
    inventory = yaml.safe_load(open(HOSTS))
    classes = ("etcd", "etcd_events", "kube_control_plane", "kube_node_cpu", "kube_node_gpu")
    nodes = set()
    for group, body in inventory["all"]["children"].items():
        if group in classes or group == "etcd_kubeadm":
            nodes.update((body or {}).get("hosts") or {})
    applied = {host for name, host, _c in ran if name == "arp_sysctl : Set gc_thresh1/2/3 in one call"}
    assert applied == nodes
    assert [r for r in ran if r[2]] == []


def test_preflight_tag_runs_only_the_checks():
    ran = run_json("playbooks/site.yml", "--tags", "preflight")
    allowed = validate_task_names()
    names = {name for name, _host, _changed in ran}
    # besides the checks themselves: the argument-spec validation, the include of validate.yml, and the include of
    # the node's runtime's role
    includes = preflight_includes()
    assert includes
    checks = {n for n in names if not SPEC.match(n) and not re.match(r"^\w+ : Validate \w+ variables", n)
              and n not in includes}
    assert checks and checks <= allowed, sorted(checks - allowed)
    roles = {n.split(" : ")[0] for n in names}
    assert {"arp_sysctl", "local_ssd", "etcd_local_disk", "events_etcd", "kubelet_pulls", "image_preload"} <= roles
    # the runtime roles' checks run though those roles are included, not listed
    assert {"docker_overlay2", "containerd_tuning"} & roles
    assert [r for r in ran if r[2]] == []


def test_a_bad_variable_of_any_worker_role_fails_the_node_before_any_role_runs():
    # local_ssd's and image_preload's (the last role) specs refuse these: the one validation task names both, and it
    # is the only task that ran on the node - not arp_sysctl, which ran first when each role validated its own.
    files = ["/etc/sysctl.d/90-kubescale-arp.conf", "/etc/docker/daemon.json", "/etc/ansible/facts.d"]
    before = node("cpu-1", "sh", "-c", "sha256sum %s %s; ls -l --time-style=full-iso %s" % tuple(files)).stdout
    report = {}
    ran = run_json("playbooks/node_cpu.yml", "-l", "cpu-1", "-e", "local_ssd_fstype=ntfs",
                   "-e", "image_preload_compression=rar", rc=2, report=report)
    assert [name for name, _h, _c in ran] == ["Check every role's variables against its argument spec"]
    failed = report["results"][0][2]
    assert failed["failed"] and sorted(failed["argument_errors"]) == ["image_preload", "local_ssd"]
    assert "local_ssd: value of local_ssd_fstype must be one of: ext4, xfs, got: ntfs" in failed["msg"]
    assert "image_preload: value of image_preload_compression must be one of" in failed["msg"]
    assert node("cpu-1", "sh", "-c", "sha256sum %s %s; ls -l --time-style=full-iso %s" % tuple(files)).stdout == before
