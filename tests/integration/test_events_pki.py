"""events_etcd's certificates on the controller, made by community.crypto: the CA (events_etcd_ca_cert not given)
and each member's certificate are issued once; a run with them current runs none of the members' certificate tasks
(the x509_due filter reads them in process); a member whose address changes or whose CA was made again gets a new
one, for the key it has, and so does one whose certificate file is no longer PEM; --check issues a due certificate
into a scratch directory and runs the same tasks as the real run after it. Runs on the controller alone (no lab
needed)."""

import os
import subprocess

import json_report
import pytest

from ansible_collections.kubescale.tuning.plugins.plugin_utils._x509 import due

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
    for task, host, res in json_report.ran(proc.stdout):
        if res.get("action") in CRYPTO:
            ran.setdefault(host, []).append(task)
    return ran


def member_due(d, name, address):
    san = ("IP:" if address[0].isdigit() else "DNS:") + address
    return due(str(d / "pki" / (name + ".crt")), str(d / "pki" / (name + ".key")), issuer_path=str(d / "pki" / "ca.crt"),
               common_name=name, sans=[san, "DNS:" + name, "DNS:localhost", "IP:127.0.0.1"],
               key_usage=["digitalSignature", "keyEncipherment"], extended_key_usage=["serverAuth", "clientAuth"])


def test_certificates_are_issued_once_and_again_only_where_due(pki):
    d, inventory = pki
    # --check on a fresh PKI: the CA is made (a build artefact, as before), each member's certificate into the scratch
    # directory, and the controller's PKI holds no member certificate after it
    checked = run(inventory, "--check")
    assert sorted(checked) == ["member-a", "member-b"]
    assert not (d / "pki" / "member-a.crt").exists() and (d / "pki" / "check-mode" / "member-a.crt").exists()
    first = run(inventory)
    # the real run does what --check did: the CA's three tasks once (run_once), each member's key, request and
    # certificate
    assert first == checked
    assert sum(len(v) for v in first.values()) == 3 + 2 * 3
    # what community.crypto wrote is what x509_due calls current
    assert member_due(d, "member-a", "10.9.0.1") == "" and member_due(d, "member-b", "member-b.example") == ""
    ca_before = (d / "pki" / "ca.crt").read_bytes()

    # all current: only the CA's tasks (kept as they are by community.crypto), no member's
    again = run(inventory)
    assert sum(len(v) for v in again.values()) == 3
    assert run(inventory, "--check") == again

    # a new address for one member: only its certificate, for the key it has
    key_a = (d / "pki" / "member-a.key").read_bytes()
    moved = run(inventory, "-l", "member-a", "-e", "events_etcd_address=10.9.0.7")
    assert len(moved["member-a"]) == 3 + 3
    assert member_due(d, "member-a", "10.9.0.7") == "" and (d / "pki" / "member-a.key").read_bytes() == key_a
    assert (d / "pki" / "ca.crt").read_bytes() == ca_before
    assert member_due(d, "member-b", "member-b.example") == ""

    # the CA made again (its files removed): every member's certificate follows
    (d / "pki" / "ca.crt").unlink()
    (d / "pki" / "ca.key").unlink()
    remade = run(inventory)
    assert sum(len(v) for v in remade.values()) == 3 + 2 * 3
    assert member_due(d, "member-b", "member-b.example") == ""
    assert sum(len(v) for v in run(inventory).values()) == 3

    # a run that died while member-b's certificate was written left half of it: issued again, not a failed run
    crt_b = d / "pki" / "member-b.crt"
    crt_b.write_bytes(crt_b.read_bytes()[:200])
    assert "is not a PEM certificate" in member_due(d, "member-b", "member-b.example")
    mended = run(inventory)
    assert len(mended["member-b"]) == 3
    assert sum(len(v) for v in mended.values()) == 3 + 3
    assert member_due(d, "member-b", "member-b.example") == ""
