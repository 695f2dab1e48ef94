"""The fleet audit finds what broke, on exactly the node it broke on (make lab-test's `lab` stream).

One thing at a time on the nodes this stream owns, the workers: a later sysctl.d file overriding a key, the SSD
unmounted, a preloaded image removed, the kubelet's config rewritten. Each must be red on that node only, with a
message saying what and where, and the run must fail (after writing the report). Every break is undone. An Events etcd
member stopped: test_control_plane.py, in the control plane's stream.
"""

import pytest
from audit_lab import audit, failed_with_report, node, only_red_on, red_nodes

pytestmark = pytest.mark.usefixtures("lab")
OWNED = "kube_node_cpu:kube_node_gpu"
OVERRIDE = "/etc/sysctl.d/99-zz-override.conf"


def test_a_later_sysctl_file_overriding_a_key(tmp_path):
    node("cpu-1", "sh", "-c", "echo 'net.ipv4.neigh.default.gc_thresh3 = 4096' > %s" % OVERRIDE)
    try:
        proc, doc, _dir = audit(tmp_path, OWNED)
        # Told not to fail, the run only reports.
        told, told_doc, _dir = audit(tmp_path / "report-only", OWNED, "-e", "fleet_audit_fail_on_red=false")
    finally:
        node("cpu-1", "rm", "-f", OVERRIDE)
    assert told.returncode == 0 and red_nodes(told_doc) == ["cpu-1"], told.stdout[-3000:]
    failed_with_report(proc)
    checks = only_red_on(doc, "cpu-1")
    assert [(c["area"], c["check"]) for c in checks] == [("sysctl", "net.ipv4.neigh.default.gc_thresh3")]
    assert "%s sets 4096 at boot (read after /etc/sysctl.d/90-kubescale-arp.conf), wanted 100000" % OVERRIDE \
        in checks[0]["message"]


def test_the_ssd_unmounted(tmp_path):
    node("gpu-1", "umount", "-l", "/mnt/local-ssd")
    try:
        proc, doc, _dir = audit(tmp_path, OWNED)
    finally:
        node("gpu-1", "mount", "-L", "kubescale", "/mnt/local-ssd")
    failed_with_report(proc)
    checks = only_red_on(doc, "gpu-1")
    assert ("local_ssd", "mounted") in [(c["area"], c["check"]) for c in checks]
    mounted = [c for c in checks if c["check"] == "mounted"][0]
    assert "is not mounted at /mnt/local-ssd" in mounted["message"]
    assert node("gpu-1", "findmnt", "-n", "-o", "TARGET", "/mnt/local-ssd").stdout.strip() == "/mnt/local-ssd"


def test_a_preloaded_image_removed(tmp_path):
    pause = "docker.io/kubescale-lab/pause:3.9"
    node("cpu-2", "docker", "rmi", "-f", pause)
    try:
        proc, doc, _dir = audit(tmp_path, OWNED)
    finally:
        # load the archive image_preload recorded again
        node("cpu-2", "sh", "-c", "zstd -dc \"$(python3 -c 'import json; print(json.load(open(\"%s\"))[\"archive\"])')\" "
             "| docker load >/dev/null" % "/etc/ansible/facts.d/kubescale_image_preload.fact")
    failed_with_report(proc)
    checks = only_red_on(doc, "cpu-2")
    assert [(c["area"], c["check"]) for c in checks] == [("runtime", "preloaded images")]
    assert pause in checks[0]["message"] and "not in the docker store with the archive's digest" in checks[0]["message"]
    assert node("cpu-2", "docker", "image", "inspect", pause).returncode == 0


def test_the_kubelet_config_rewritten(tmp_path):
    path = "/var/lib/kubelet/config.yaml"
    original = node("cpu-2", "cat", path).stdout
    node("cpu-2", "sh", "-c", "sed -i 's/^serializeImagePulls: false$/serializeImagePulls: true/' %s" % path)
    try:
        assert "serializeImagePulls: true" in node("cpu-2", "cat", path).stdout
        proc, doc, _dir = audit(tmp_path, OWNED)
    finally:
        node("cpu-2", "python3", "-c", "import sys; open(%r, 'w').write(sys.argv[1])" % path, original)
    failed_with_report(proc)
    checks = only_red_on(doc, "cpu-2")
    assert [(c["area"], c["check"]) for c in checks] == [("runtime", "kubelet serializeImagePulls")]
    assert "%s has serializeImagePulls: True, kubelet_pulls applied False" % path in checks[0]["message"]
    assert node("cpu-2", "cat", path).stdout == original


def test_bad_thresholds_fail_before_any_node_is_read(tmp_path):
    for extra, message in (
            (["-e", "fleet_audit_etcd_db_red=lots"], "fleet_audit_etcd_db_red"),
            (["-e", "fleet_audit_neigh_amber=0.9", "-e", "fleet_audit_neigh_red=0.5"], "each *_amber must be below")):
        proc, doc, _dir = audit(tmp_path, OWNED, *extra)
        assert proc.returncode != 0 and doc is None
        assert message in " ".join(proc.stdout.split()), proc.stdout[-2000:]
