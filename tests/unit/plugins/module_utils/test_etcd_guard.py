"""_etcd_guard: a member starts only under an identity whose data it has."""

import os
import subprocess
import sys

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils.etcd import guard as g

GUARD = g.__file__


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "etcd-events"
    path.mkdir()
    return str(path)


def test_a_member_with_data_starts_as_it_is_whatever_an_admission_says(data):
    os.mkdir(os.path.join(data, "member"))
    with open(g.admission_path(data), "w") as f:
        f.write("existing\n")
    assert g.decide(data)[0] == "data"


@pytest.mark.parametrize("state", ["new", "existing"])
def test_an_empty_member_starts_only_as_its_admission_says(data, state):
    with open(g.admission_path(data + "/"), "w") as f:
        f.write(state + "\n")
    assert g.admission_path(data + "/") == data + ".admitted"
    assert g.decide(data)[0] == state


@pytest.mark.parametrize("admission", [None, "", "bootstrap", "existing existing"])
def test_an_empty_member_without_a_valid_admission_is_refused(data, admission):
    if admission is not None:
        with open(g.admission_path(data), "w") as f:
            f.write(admission)
    state, why = g.decide(data)
    assert state == ""
    assert "refusing to start" in why and data in why and "re-adds it under a new ID" in why


def run_guard(data, tmp_path):
    """The guard as its unit runs it, with a stand-in etcd that prints the state it was given."""
    etcd = tmp_path / "etcd"
    etcd.write_text("#!/bin/sh\necho \"state=${ETCD_INITIAL_CLUSTER_STATE:-unset} args=$*\"\n")
    etcd.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "ETCD_INITIAL_CLUSTER_STATE"}
    return subprocess.run([sys.executable, GUARD, data, "--", str(etcd), "--name", "m1"], capture_output=True,
                          text=True, check=False, env=dict(env, ETCD_INITIAL_CLUSTER_STATE="existing"))


def test_the_guard_becomes_etcd_with_the_admitted_state(data, tmp_path):
    with open(g.admission_path(data), "w") as f:
        f.write("new\n")
    proc = run_guard(data, tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "state=new args=--name m1", proc.stderr


def test_the_guard_leaves_a_member_with_data_its_own_environment(data, tmp_path):
    os.mkdir(os.path.join(data, "member"))
    proc = run_guard(data, tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "state=existing args=--name m1", proc.stderr


def test_the_guard_refuses_a_wiped_member_with_the_code_its_unit_does_not_restart_on(data, tmp_path):
    proc = run_guard(data, tmp_path)
    assert proc.returncode == g.REFUSED == 78 and proc.stdout == ""
    assert "etcd-guard: refusing to start" in proc.stderr


def test_a_bad_command_line_is_a_usage_error(data):
    proc = subprocess.run([sys.executable, GUARD, data, "/bin/true"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "usage" in proc.stderr
