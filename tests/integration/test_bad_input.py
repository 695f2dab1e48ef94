"""Every public variable whose spec can refuse a value, fed one (tests/integration/bad_input.py), through the class
playbook that runs its role: the run fails in its first task, the one that checks every role's variables, naming each
variable; the node's files and unit states and the cluster's objects are as they were.

All of a playbook's bad values go in one run, as the validation task reports every refusal at once. Runs on the
converged lab while nothing else does (Makefile lab-test).
"""

import hashlib
import json
import os
import subprocess
import tempfile

import bad_input
import json_report
import pytest
from kube import kubectl
from labnode import node

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")
CASES = bad_input.cases()
WORKER = ["arp_sysctl", "local_ssd", "docker_overlay2", "kubelet_pulls", "image_preload"]
# (playbook, the node it is limited to, the roles it validates, the extra vars that pick them)
RUNS = [
    ("playbooks/etcd.yml", "etcd-1", ["arp_sysctl", "local_ssd", "etcd_local_disk"], {}),
    ("playbooks/etcd.yml", "etcd-kubeadm-1", ["arp_sysctl", "local_ssd", "etcd_local_disk"], {}),
    ("playbooks/etcd_events.yml", "etcd-events-1", ["arp_sysctl", "local_ssd", "events_etcd"], {}),
    ("playbooks/control_plane.yml", "cp-1",
     ["arp_sysctl", "docker_overlay2", "kubelet_pulls", "scheduler_binpack", "dns_spread", "apiserver_load"], {}),
    ("playbooks/node_cpu.yml", "cpu-1", WORKER, {}),
    # a containerd node's: the same playbook validates containerd_tuning in docker_overlay2's place
    ("playbooks/node_gpu.yml", "gpu-1", [r.replace("docker_overlay2", "containerd_tuning") for r in WORKER],
     {"kubescale_container_runtime": "containerd"}),
    ("playbooks/audit.yml", "cpu-1", ["fleet_audit"], {}),
]
# Variables a play keyword reads before any task (the audit's batch size): ansible-core templates the keyword before
# the validation task can run, so they are fed in runs of their own (test_a_bad_rollout_*), not with the others.
KEYWORD_VARS = {"fleet_audit_batch"}
# Each class playbook's rollout variables (serial, max_fail_percentage), and the audit's batch.
ROLLOUT = [
    ("playbooks/etcd.yml", "kubescale_serial_etcd", "0"),
    ("playbooks/etcd_events.yml", "kubescale_serial_etcd_events", "150%"),
    ("playbooks/control_plane.yml", "kubescale_max_fail_percentage_kube_control_plane", "many"),
    ("playbooks/node_cpu.yml", "kubescale_serial_kube_node_cpu", [1, 0]),
    ("playbooks/node_gpu.yml", "kubescale_max_fail_percentage_kube_node_gpu", "101"),
    ("playbooks/audit.yml", "fleet_audit_batch", "many"),
]
VALIDATION = ("Check every role's variables against its argument spec",
              "fleet_audit : Validating arguments against arg spec 'main' - ")
# The objects the roles write through the API (and the ConfigMaps kubeadm reads the tunings from).
OBJECTS = [["-n", "kube-system", "deployment/coredns", "configmap/kubeadm-config", "configmap/kubelet-config",
            "configmap/coredns"], ["-n", "kube-system", "poddisruptionbudgets"],
           ["flowschemas,prioritylevelconfigurations"]]

pytestmark = pytest.mark.usefixtures("lab")


def fingerprint(host):
    """The node's files under /etc, /var/lib/kubescale and /opt/kubescale (content, mode, owner, mtime; the snapshot
    timer's output aside), its unit files' states, and whether each unit the roles manage is running (the snapshot
    timer's oneshot service aside: it runs on its calendar)."""
    script = ("find /etc /var/lib/kubescale /opt/kubescale -xdev -path /var/lib/kubescale/etcd-snapshots -prune "
              "-o -type f -printf '%p %m %u %g %T@\\n' -exec sha256sum {} + 2>/dev/null | sort; "
              "systemctl list-unit-files --no-legend --no-pager | sort; "
              "systemctl list-units --all --no-legend --no-pager --plain 'kubescale-*' docker.service "
              "containerd.service cri-docker.service etcd.service etcd-events.service kubelet.service kwok.service "
              "| grep -v '^kubescale-etcd-snapshot.service' | awk '{print $1, $3, $4}' | sort")
    out = node(host, "sh", "-c", script, check=False).stdout
    return hashlib.sha256(out.encode()).hexdigest(), len(out.splitlines())


def api_versions():
    objects = [o for query in OBJECTS for o in json.loads(kubectl("get", *query, "-o", "json").stdout)["items"]]
    return sorted("%s/%s/%s=%s" % (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"],
                                   o["metadata"]["resourceVersion"]) for o in objects)


def run(playbook, host, extra):
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(extra, f)
        f.flush()
        proc = subprocess.run(["ansible-playbook", "-i", HOSTS, playbook, "-l", host, "-e", "@" + f.name],
                              cwd=REPO, capture_output=True, text=True, check=False,
                              env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
                                       ANSIBLE_STDOUT_CALLBACK="json"))
    return proc


def test_every_run_covers_every_probed_variable():
    covered = set(role for _p, _h, roles, _e in RUNS for role in roles)
    assert covered == set(CASES), sorted(set(CASES) ^ covered)


RUN_IDS = ["%s-%s" % (r[0].split("/")[1][:-4], r[1]) for r in RUNS]
HOST_OF = {"playbooks/etcd.yml": "etcd-1", "playbooks/etcd_events.yml": "etcd-events-1",
           "playbooks/control_plane.yml": "cp-1", "playbooks/node_cpu.yml": "cpu-1", "playbooks/node_gpu.yml": "gpu-1",
           "playbooks/audit.yml": "cpu-1"}


@pytest.mark.parametrize("playbook, host, roles, picks", RUNS, ids=RUN_IDS)
def test_every_bad_value_of_the_playbooks_roles_is_refused_by_name_before_anything_changes(playbook, host, roles,
                                                                                           picks):
    extra = dict(((n, v) for n, v in bad_input.extra_vars(CASES, roles).items() if n not in KEYWORD_VARS), **picks)
    before, api_before = fingerprint(host), api_versions()
    assert before[1] > 100 and len(api_before) >= 6, (before, api_before)
    report_dir = os.path.join(REPO, "kubescale-audit")
    report_before = sorted(os.listdir(report_dir)) if os.path.isdir(report_dir) else None
    proc = run(playbook, host, extra)
    assert proc.returncode == 2, (proc.stdout[-3000:], proc.stderr[-2000:])
    ran = json_report.ran(proc.stdout)
    assert len(ran) == 1 and ran[0][0].startswith(VALIDATION) and ran[0][1] == host, [r[:2] for r in ran]
    result = ran[0][2]
    assert result["failed"] and not result.get("changed")
    said = result["msg"] + json.dumps(result.get("argument_errors", ""))
    unnamed = [(name, words) for role in roles for name, (_v, words) in CASES[role].items()
               if words not in said and name not in KEYWORD_VARS]
    assert unnamed == [], (unnamed, said[-3000:])
    assert fingerprint(host) == before
    assert api_versions() == api_before
    assert (sorted(os.listdir(report_dir)) if os.path.isdir(report_dir) else None) == report_before


@pytest.mark.parametrize("playbook, name, value", ROLLOUT, ids=[r[1] for r in ROLLOUT])
def test_a_bad_rollout_size_stops_the_play_before_any_task_naming_its_variable(playbook, name, value):
    """ansible-core's own reading of a bad serial stops with a Python traceback; the playbooks check theirs first
    (filter rollout_batch, rollout_percent)."""
    host = HOST_OF[playbook]
    before = fingerprint(host)
    proc = run(playbook, host, {name: value})
    assert proc.returncode != 0
    said = proc.stdout + proc.stderr
    assert "failed: %s: " % name in said and "is not" in said and "Nothing was changed" in said, said[-2000:]
    assert "Traceback" not in said and '"task"' not in proc.stdout, said[-2000:]
    assert fingerprint(host) == before
