"""kubescale.tuning.disk_latency run as Ansible runs it, on this machine's disk."""

import os
import subprocess

import json_report
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_module(args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    proc = subprocess.run(["ansible", "localhost", "-i", "localhost,", "-c", "local",
                           "-e", "ansible_python_interpreter=/usr/bin/python3",
                           "-m", "kubescale.tuning.disk_latency", "-a", args],
                          cwd=REPO, env=env, capture_output=True, text=True, check=False)
    return proc.returncode, json_report.first(proc.stdout, "localhost")


def test_measures_and_cleans_up(tmp_path):
    rc, res = run_module("path=%s size=2m max_p99_ms=0" % tmp_path)
    assert rc == 0 and not res["changed"]
    lat = res["latency"]
    assert lat["samples"] == 2 * 1024 * 1024 // 2300
    assert 0 < lat["p50_ms"] <= lat["p90_ms"] <= lat["p99_ms"] <= lat["max_ms"] and lat["iops"] > 0
    assert os.listdir(str(tmp_path)) == []


def test_gate_fails_clearly_above_max_p99(tmp_path):
    rc, res = run_module("path=%s size=1m max_p99_ms=0.000001" % tmp_path)
    assert rc != 0
    assert "above max_p99_ms" in res["msg"] and str(tmp_path) in res["msg"]
    assert res["latency"]["p99_ms"] > 0
    assert os.listdir(str(tmp_path)) == []


@pytest.mark.parametrize("args,message", [
    ("path=relative/dir", "must be an absolute directory"),
    ("path=/nonexistent/kubescale", "is not an existing directory"),
    ("path=/tmp size=22x", "size: '22x' is not a byte count"),
    ("path=/tmp block_size=100", "block_size"),
    ("path=/tmp max_p99_ms=-1", "max_p99_ms"),
    ("path=/tmp timeout=0", "timeout"),
])
def test_bad_input(args, message):
    rc, res = run_module(args)
    assert rc != 0 and message in res["msg"]
