"""Against the lab: a failing batch stops the rollout (serial + max_fail_percentage)."""

import os
import re
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")


@pytest.mark.usefixtures("lab")
def test_failing_first_batch_stops_the_rollout(tmp_path):
    # cpu-1 gets a bad variable; with batches of one host, cpu-2 must never be touched.
    bad = tmp_path / "bad.yml"
    bad.write_text("all:\n  hosts:\n    cpu-1:\n      arp_sysctl_gc_thresh1: 95000\n")
    proc = subprocess.run(
        ["ansible-playbook", "-i", HOSTS, "-i", str(bad), "playbooks/node_cpu.yml",
         "-e", "kubescale_serial_kube_node_cpu=1"],
        cwd=REPO, capture_output=True, text=True, check=False,
        env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg")))
    assert proc.returncode != 0
    assert "arp_sysctl_gc_thresh1 (95000) <= arp_sysctl_gc_thresh2" in proc.stdout
    recap = proc.stdout[proc.stdout.index("PLAY RECAP"):]
    assert re.search(r"cpu-1\s+: .*failed=1", recap)
    assert "cpu-2" not in recap, "the second batch ran after the first one failed"
