"""events_etcd's certificates on the controller, made by community.crypto: the CA (events_etcd_ca_cert not given)
and each member's certificate are issued once; a run with them current runs none of community.crypto's tasks (the
x509_due filter reads them in process); a member whose address changes, whose certificate was removed or whose CA was
made again gets a new one, and only that member. Runs on the controller alone (no lab needed)."""

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, ".collections"))

from ansible_collections.kubescale.tuning.plugins.plugin_utils._x509 import due  # noqa: E402

CRYPTO = ("community.crypto.openssl_privatekey", "community.crypto.openssl_csr_pipe",
          "community.crypto.x509_certificate")


@pytest.fixture
def pki(tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  vars:\n    ansible_connection: local\n    ansible_python_interpreter: %s\n"
        "    events_etcd_controller_pki_dir: %s\n  hosts:\n"
        "    member-a: {events_etcd_address: 10.9.0.1}\n    member-b: {events_etcd_address: member-b.example}\n"
        % (os.path.join(REPO, ".venv", "bin", "python"), tmp_path / "pki"))
    return tmp_path, inventory


def run(inventory, *extra):
    proc = subprocess.run(
        ["ansible-playbook", "-i", str(inventory), "tests/integration/events_pki.yml", *extra], cwd=REPO,
        capture_output=True, text=True, check=False,
        env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="json"))
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-2000:])
    ran = {}
    for play in json.loads(proc.stdout)["plays"]:
        for task in play["tasks"]:
            for host, res in task["hosts"].items():
                if res.get("action") in CRYPTO and not res.get("skipped"):
                    ran.setdefault(host, []).append(task["task"]["name"])
    return ran


def member_due(d, name, address):
    san = ("IP:" if address[0].isdigit() else "DNS:") + address
    return due(str(d / "pki" / (name + ".crt")), str(d / "pki" / (name + ".key")), issuer_path=str(d / "pki" / "ca.crt"),
               common_name=name, sans=[san, "DNS:" + name, "DNS:localhost", "IP:127.0.0.1"],
               key_usage=["digitalSignature", "keyEncipherment"], extended_key_usage=["serverAuth", "clientAuth"])


def test_certificates_are_issued_once_and_again_only_where_due(pki):
    d, inventory = pki
    first = run(inventory)
    # the CA once (run_once), each member's key, request and certificate
    assert sorted(first) == ["member-a", "member-b"]
    assert sum(len(v) for v in first.values()) == 3 + 2 * 3
    # what community.crypto wrote is what x509_due calls current
    assert member_due(d, "member-a", "10.9.0.1") == "" and member_due(d, "member-b", "member-b.example") == ""
    assert due(str(d / "pki" / "ca.crt"), str(d / "pki" / "ca.key"), common_name="kubescale-events-etcd-ca",
               key_usage=["keyCertSign", "cRLSign"], ca=True) == ""
    ca_before = (d / "pki" / "ca.crt").read_bytes()

    assert run(inventory) == {}  # all current: no module run at all

    # a new address for one member: only its certificate (its key is kept)
    key_a = (d / "pki" / "member-a.key").read_bytes()
    again = run(inventory, "-l", "member-a", "-e", "events_etcd_address=10.9.0.7")
    assert list(again) == ["member-a"] and len(again["member-a"]) == 3
    assert member_due(d, "member-a", "10.9.0.7") == "" and (d / "pki" / "member-a.key").read_bytes() == key_a
    assert (d / "pki" / "ca.crt").read_bytes() == ca_before

    # the CA made again (its files removed): the CA, then every member's certificate
    (d / "pki" / "ca.crt").unlink()
    (d / "pki" / "ca.key").unlink()
    remade = run(inventory)
    assert sorted(remade) == ["member-a", "member-b"] and sum(len(v) for v in remade.values()) == 3 + 2 * 3
    assert member_due(d, "member-b", "member-b.example") == ""
    assert run(inventory) == {}
