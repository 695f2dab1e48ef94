"""Against the converged lab: a worker changed behind its facts' back is found and mended by the one call of each
tuning that owns its files (node_state's code: on its own, or nested in the tuning's main call - the SSD probe, the
image load), `--check` predicting exactly those tasks, and the run after changes nothing.

The drift is what an operator or another tool does by hand on a node: a consumer's drop-in edited, the boot-time
probe script edited (its text is sent again, and only it), the boot-time image reload disabled, the kubelet put back
to serial pulls, a recorded fact deleted.
"""

import json
import os
import subprocess

import json_report
import pytest
import yaml
from labnode import node

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")
HOST = "cpu-2"
DROPIN = "/etc/systemd/system/docker.service.d/10-kubescale-local-ssd.conf"
KUBELET = "/var/lib/kubelet/config.yaml"
ARP_FACT = "/etc/ansible/facts.d/kubescale_arp_sysctl.fact"
SCRIPT = "/usr/local/lib/kubescale/local_ssd.py"

pytestmark = pytest.mark.usefixtures("lab")


def playbook(*args):
    proc = subprocess.run(
        ["ansible-playbook", "-i", HOSTS, "playbooks/node_cpu.yml", "-l", HOST, *args], cwd=REPO, capture_output=True,
        text=True, check=False,
        env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="json"))
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-2000:])
    return [(task.split(" : ")[0], res) for task, host, res in json_report.results(proc.stdout) if host == HOST]


def changed_tasks(*args, sent=None):
    """The roles whose tasks changed; `sent` collects the paths whose text a task's node_state sent."""
    results = playbook(*args)
    if sent is not None:
        sent.extend(p for _role, res in results for p in res.get("content_sent", []))
    return {role for role, res in results if res.get("changed")}


def test_drift_behind_the_facts_is_predicted_mended_and_then_quiet():
    sent = []
    assert changed_tasks(sent=sent) == set(), "the worker must start converged"
    # A converged node is sent the hashes of the scripts the roles install, never their text.
    assert sent == []
    node(HOST, "sh", "-c", "echo '# edited by hand' >> %s" % SCRIPT)
    node(HOST, "sh", "-c", "echo '# edited by hand' > %s" % DROPIN)
    node(HOST, "systemctl", "disable", "--quiet", "kubescale-image-preload.service")
    config = yaml.safe_load(node(HOST, "cat", KUBELET).stdout)
    assert config["serializeImagePulls"] is False
    config["serializeImagePulls"] = True
    node(HOST, "sh", "-c", "cat > %s" % KUBELET, stdin=yaml.safe_dump(config))
    node(HOST, "rm", ARP_FACT)

    expected = {"local_ssd", "image_preload", "kubelet_pulls", "arp_sysctl"}
    assert changed_tasks("--check") == expected
    assert node(HOST, "cat", DROPIN).stdout == "# edited by hand\n"  # --check changed nothing
    sent = []
    assert changed_tasks(sent=sent) == expected
    # Only the edited script's text crossed the wire; the image loader's copy matched its hash.
    assert sent == [SCRIPT]
    assert node(HOST, "tail", "-n", "1", SCRIPT).stdout != "# edited by hand\n"
    assert "Requires=kubescale-local-ssd.service" in node(HOST, "cat", DROPIN).stdout
    assert node(HOST, "systemctl", "is-enabled", "kubescale-image-preload.service").stdout.strip() == "enabled"
    assert yaml.safe_load(node(HOST, "cat", KUBELET).stdout)["serializeImagePulls"] is False
    assert json.loads(node(HOST, "cat", ARP_FACT).stdout)["gc_thresh3"] == 100000
    assert changed_tasks() == set()
