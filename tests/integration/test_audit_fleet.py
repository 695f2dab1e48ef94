"""playbooks/audit.yml over the whole converged lab, while nothing else runs (make lab-test, right after site and the
real kubeadm's upgrade of every node, test_kubeadm_lifecycle.py).

All green; read-only by construction: with --check and without, every node's /etc and /var/lib/kubescale unchanged
and changed=0 everywhere; the HTML report opened in a real browser (Debian's headless Chromium): the summary and the
plots render, no console error; the screenshot is kept in tests/output/.
"""

import os
import re
import shutil
import subprocess

import pytest
from audit_lab import AUDITED, REPO, audit, fingerprint, lab_hosts

pytestmark = pytest.mark.usefixtures("lab")
ARTIFACTS = os.path.join(REPO, "tests", "output", "audit")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    hosts = lab_hosts()
    before = dict((h, fingerprint(h)) for h in hosts)
    checked = audit(tmp_path_factory.mktemp("check"), AUDITED, "--check")
    real = audit(tmp_path_factory.mktemp("real"))
    after = dict((h, fingerprint(h)) for h in hosts)
    return {"hosts": hosts, "before": before, "after": after, "check": checked, "real": real}


def recaps(stdout):
    return dict((m.group(1), int(m.group(2))) for m in re.finditer(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", stdout, re.M))


def test_the_converged_lab_is_all_green(runs):
    for mode in ("check", "real"):
        proc, doc, _dir = runs[mode]
        assert proc.returncode == 0, proc.stdout[-4000:]
        assert doc["schema"] == "kubescale.tuning/audit/v1" and doc["check_mode"] == (mode == "check")
        assert doc["failing"] == [], doc["failing"]
        assert set(doc["nodes"]) == set(runs["hosts"])
        assert doc["totals"]["green"] == len(runs["hosts"])
        areas = set(c["area"] for n in doc["nodes"].values() for c in n["checks"])
        assert {"sysctl", "neighbours", "local_ssd", "etcd", "etcd_events", "control_plane", "runtime", "boot",
                "kubeadm"} <= areas  # kubeadm: its record agrees with every node (nothing an upgrade would revert)
        assert sum(c["nodes"] for c in doc["classes"].values()) == len(runs["hosts"])


def test_nothing_changed_on_any_node_with_or_without_check(runs):
    assert runs["after"] == runs["before"]
    for mode in ("check", "real"):
        changed = recaps(runs[mode][0].stdout)
        assert set(runs["hosts"]) <= set(changed)
        assert all(v == 0 for v in changed.values()), changed


def test_the_report_renders_in_a_real_browser(runs, tmp_path):
    chromium = shutil.which("chromium")
    assert chromium, "chromium is installed by scripts/deps.sh"
    html = os.path.join(runs["real"][2], "audit.html")
    os.makedirs(ARTIFACTS, exist_ok=True)
    shot = os.path.join(ARTIFACTS, "audit-report.png")
    base = [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--user-data-dir=%s" % tmp_path, "--enable-logging=stderr", "--v=0"]
    dom = subprocess.run(base + ["--virtual-time-budget=2000", "--dump-dom", "file://" + html],
                         capture_output=True, text=True, timeout=120, check=False)
    assert dom.returncode == 0, dom.stderr[-2000:]
    consoles = [line for line in dom.stderr.splitlines() if "CONSOLE" in line]
    assert not [line for line in consoles if "Uncaught" in line or "ERROR" in line], consoles
    # etcd database vs quota and neighbour-table fill (fdatasync is not measured unless asked)
    assert 'id="summary"' in dom.stdout and dom.stdout.count("<svg") == 2
    assert "etcd database vs quota" in dom.stdout
    proc = subprocess.run(base + ["--window-size=1280,1600", "--screenshot=%s" % shot, "file://" + html],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and os.path.getsize(shot) > 10000, proc.stderr[-2000:]
    from PIL import Image
    with Image.open(shot) as img:
        rgb = img.convert("RGB")
        colours = set(rgb.get_flattened_data())
    assert len(colours) > 50  # text, table rules, pills and plots, not a blank page
    assert (0x2E, 0x7D, 0x32) in colours  # the green of the summary's pills and the plots' bars
