"""Against the lab: an Azure redeploy wipes a node's resource disk; the boot unit must bring it back."""

import json
import os
import re
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"))


def node(name, *argv):
    return subprocess.run(["docker", "exec", "kslab-" + name] + list(argv), capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.usefixtures("lab")
@pytest.mark.parametrize("name,disk", [("cpu-1", "ntfs"), ("gpu-1", "blank")])
def test_redeploy_restores_the_ssd_and_converge_changes_nothing(name, disk):
    node(name, "sh", "-c", "echo before-redeploy > /mnt/local-ssd/canary")
    subprocess.run(["/usr/bin/python3", "-m", "lab", "redeploy", name, "--disk", disk], cwd=REPO, check=True)
    mounts = node(name, "findmnt", "-n", "-o", "SOURCE,FSTYPE,OPTIONS", "/mnt/local-ssd")
    assert re.match(r"/dev/sdb\s+ext4\s+.*noatime", mounts)
    marker = json.loads(node(name, "cat", "/var/lib/kubescale/local-ssd.wiped"))
    assert marker["by"] == "boot"
    assert marker["found"] == ("ntfs-readme-only" if disk == "ntfs" else "blank")
    assert marker["boot_id"] == node(name, "cat", "/proc/sys/kernel/random/boot_id").strip()
    assert "canary" not in node(name, "ls", "/mnt/local-ssd")  # the disk really was wiped
    play = "playbooks/node_cpu.yml" if name.startswith("cpu") else "playbooks/node_gpu.yml"
    proc = subprocess.run(["ansible-playbook", play, "-l", name], cwd=REPO, env=ENV, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert re.search(r"%s\s+: ok=\d+\s+changed=0 " % re.escape(name), proc.stdout), proc.stdout[-2000:]
