"""The Azure inventory's grouping, run for real on recorded azure_rm host data.

Azure is unreachable here, so the expressions of inventories/azure/azure_rm.yml (conditional_groups,
keyed_groups, hostvar_expressions) are copied verbatim into a `constructed` inventory and applied to
tests/fixtures/azure_vms.yml, which holds hostvars in the shape azure_rm produces.
"""

import json
import os
import subprocess

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLASSES = ["etcd", "etcd_events", "kube_control_plane", "kube_node_cpu", "kube_node_gpu"]


def load(path):
    with open(os.path.join(REPO, path)) as f:
        return yaml.safe_load(f)


def test_every_vm_lands_in_its_class(tmp_path):
    azure = load("inventories/azure/azure_rm.yml")
    assert azure["plugin"] == "azure.azcollection.azure_rm"
    constructed = {
        "plugin": "ansible.builtin.constructed",
        "strict": True,
        "compose": azure["hostvar_expressions"],
        "groups": azure["conditional_groups"],
        "keyed_groups": azure["keyed_groups"],
    }
    cfg = tmp_path / "kubescale.config.yml"
    cfg.write_text(yaml.safe_dump(constructed))
    fixture = os.path.join(REPO, "tests/fixtures/azure_vms.yml")
    env = dict(os.environ, ANSIBLE_INVENTORY_ENABLED="ansible.builtin.yaml,ansible.builtin.constructed",
               ANSIBLE_INVENTORY_UNPARSED_FAILED="true", ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED="true",
               ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"))
    out = subprocess.run(["ansible-inventory", "-i", fixture, "-i", str(cfg), "--list"], env=env, cwd=REPO,
                         check=True, capture_output=True, text=True)
    inv = json.loads(out.stdout)
    hostvars = inv["_meta"]["hostvars"]
    fixture_hosts = load("tests/fixtures/azure_vms.yml")["all"]["hosts"]
    assert set(hostvars) == set(fixture_hosts)
    for host, data in fixture_hosts.items():
        member_of = [c for c in CLASSES if host in inv.get(c, {}).get("hosts", [])]
        expected = [data["expected_class"]] if data["expected_class"] else []
        assert member_of == expected, "%s: in %s, expected %s" % (host, member_of, expected)
        assert hostvars[host]["ansible_host"] == data["private_ipv4_addresses"][0]
    assert "jumpbox" in inv["node_class_untagged"]["hosts"]
    assert "k8s-etcd-0" in inv["node_class_etcd"]["hosts"]


def test_class_group_vars_reach_azure_hosts(tmp_path):
    """The per-class defaults live beside the playbooks, so the Azure inventory gets them too."""
    for cls in CLASSES:
        assert load("playbooks/group_vars/%s.yml" % cls)["kubescale_node_class"] == cls
    assert load("playbooks/group_vars/kube_node_cpu.yml")["kubescale_vm_size"] == "Standard_D15_v2"
    assert load("playbooks/group_vars/kube_node_gpu.yml")["kubescale_vm_size"] == "Standard_NC24"
