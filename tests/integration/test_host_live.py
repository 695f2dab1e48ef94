"""sysctl_profile in the host's initial network namespace: live values set, read back, restored."""

import os
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KEYS = ["net/%s/neigh/default/gc_thresh%d" % (fam, i) for fam in ("ipv4", "ipv6") for i in (1, 2, 3)]
TEST_FILE = "/run/sysctl.d/90-kubescale-hosttest.conf"


def read_live():
    out = {}
    for key in KEYS:
        with open("/proc/sys/" + key) as f:
            out[key] = f.read().strip()
    return out


@pytest.mark.skipif(not os.path.exists("/proc/sys/" + KEYS[0]) or not os.access("/proc/sys/" + KEYS[0], os.W_OK),
                    reason="needs the initial network namespace with a writable /proc/sys")
def test_apply_live_then_restore():
    before = read_live()
    proc = subprocess.run(["ansible-playbook", "-i", "localhost,", os.path.join(REPO, "tests/integration/host_live.yml")],
                          cwd=REPO, capture_output=True, text=True, check=False,
                          env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg")))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "failed=0" in proc.stdout
    assert read_live() == before, "live values were not restored"
    assert not os.path.exists(TEST_FILE)
