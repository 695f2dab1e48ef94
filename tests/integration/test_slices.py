"""Against the lab: one fleet run from K = 3 controllers at once, each on its slice (inventories/slice.yml).

The three slices run side by side, as three controllers would: disjoint, together every lab node, each a run of its
own. A host that fails in one slice stops that slice's rollout (serial 1 and max_fail_percentage 0 for etcd) and
nothing in the other two. `--tags preflight` keeps the runs read-only, which is why the whole site playbook (etcd
classes included, which a real fleet does not slice) can show it on the lab's few workers.
"""

import json
import os
import subprocess

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")
SLICE = os.path.join(REPO, "inventories", "slice.yml")

pytestmark = pytest.mark.usefixtures("lab")


def lab_hosts():
    hosts = set()
    for body in yaml.safe_load(open(HOSTS))["all"]["children"].values():
        hosts.update(((body or {}).get("hosts") or {}))
    return hosts


def run_slices(extra_inventory=()):
    """The three slices side by side; per slice: (exit code, {host: its stats})."""
    procs = []
    for index in (1, 2, 3):
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="json",
                   KUBESCALE_SLICE_COUNT="3", KUBESCALE_SLICE_INDEX=str(index))
        argv = ["ansible-playbook", "-i", HOSTS]
        for path in extra_inventory:
            argv += ["-i", path]
        argv += ["-i", SLICE, "playbooks/site.yml", "--tags", "preflight"]
        procs.append(subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate()
        out.append((proc.returncode, json.loads(stdout)["stats"] if stdout.strip() else {}, stderr))
    return out


def test_three_slices_are_disjoint_and_together_the_whole_lab():
    results = run_slices()
    assert [rc for rc, _stats, _err in results] == [0, 0, 0], [err[-1500:] for _rc, _s, err in results]
    slices = [set(stats) for _rc, stats, _err in results]
    assert all(slices), slices
    assert not (slices[0] & slices[1]) and not (slices[0] & slices[2]) and not (slices[1] & slices[2]), slices
    assert slices[0] | slices[1] | slices[2] == lab_hosts()
    assert all(s["changed"] == 0 and s["failures"] == 0 for _rc, stats, _err in results for s in stats.values())


def test_a_failing_host_stops_its_own_slice_only(tmp_path):
    # etcd-1 gets a bad variable: in its slice the etcd play (serial 1, max_fail_percentage 0) stops after its batch
    bad = tmp_path / "bad.yml"
    bad.write_text("all:\n  hosts:\n    etcd-1:\n      arp_sysctl_gc_thresh1: 95000\n")
    results = run_slices([str(bad)])
    own = [i for i, (_rc, stats, _err) in enumerate(results) if "etcd-1" in stats]
    assert len(own) == 1
    rc, stats, _err = results[own[0]]
    assert rc != 0 and stats["etcd-1"]["failures"] == 1
    # nothing after etcd-1's batch ran in its slice (its other etcd member, its control plane, Events and worker nodes)
    assert set(stats) == {"etcd-1"}, stats
    others = [r for i, r in enumerate(results) if i != own[0]]
    assert [r[0] for r in others] == [0, 0], [r[2][-1500:] for r in others]
    assert all(s["failures"] == 0 for r in others for s in r[1].values())
