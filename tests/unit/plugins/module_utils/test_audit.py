"""The fleet audit's verdicts (_audit) and report page (_audit_html), on module results in Ansible's shapes."""

import base64
import copy
import json
from html.parser import HTMLParser

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils.audit import html as H
from ansible_collections.kubescale.tuning.plugins.module_utils.audit import report as A

OURS = "/etc/sysctl.d/90-kubescale-arp.conf"
NOW = 1_800_000_000.0


def sysctl_key(wanted="100000", live="100000", persisted="100000", boot="100000", winning=OURS):
    return {"wanted": wanted, "live": live, "live_status": "ok", "persisted": persisted, "boot": boot,
            "winning_file": winning}


def worker():
    """A converged CPU worker, as the fleet_audit tasks register it."""
    facts = {
        "kubescale_arp_sysctl": {"file": OURS, "gc_thresh3": 100000, "families": ["ipv4"]},
        "kubescale_local_ssd": {"mount": "/mnt/local-ssd", "fstype": "ext4", "label": "kubescale",
                                "marker": "/var/lib/kubescale/local-ssd.wiped", "unit": "kubescale-local-ssd.service"},
        "kubescale_docker_overlay2": {"data_root": "/mnt/local-ssd/docker", "storage_driver": "overlay2",
                                      "max_concurrent_downloads": 10, "live_restore": True, "cgroup_driver": "systemd"},
        "kubescale_kubelet_pulls": {"config_path": "/var/lib/kubelet/config.yaml", "serialize_image_pulls": False,
                                    "max_parallel_image_pulls": 10},
        "kubescale_image_preload": {"archive": "/var/lib/kubescale/images/preload.tar.zst", "runtime": "docker"},
    }
    return {
        "facts": facts,
        "sysctl": {"changed": False, "file": OURS, "observed": {
            "net.ipv4.neigh.default.gc_thresh%d" % i: sysctl_key(str(v), str(v), str(v), str(v))
            for i, v in ((1, 80000), (2, 90000), (3, 100000))}},
        "neigh": {"ansible_facts": {"kubescale_neigh": {
            "ipv4": {"entries": 40, "gc_thresh3": 100000, "usage": 0.0004, "table_fulls": 0},
            "kernel_log_overflow_messages": 0, "kernel_log_source": "dmesg"}}},
        "ssd": {"ansible_facts": {"kubescale_local_ssd": {"device": "/dev/sdb", "mounted_at": ["/mnt/local-ssd"],
                                                          "found": "ext4", "found_label": "kubescale",
                                                          "verdict": "ours"}}},
        "ssd_marker": {"stat": {"exists": True, "mtime": NOW - 3600}},
        "ssd_mount": {"stat": {"exists": True, "dev": 2065}},
        "docker": {"rc": 0, "stdout": json.dumps({"DockerRootDir": "/mnt/local-ssd/docker", "Driver": "overlay2",
                                                  "CgroupDriver": "systemd", "LiveRestoreEnabled": True})},
        "kubelet": {"content": base64.b64encode(b"kind: KubeletConfiguration\nserializeImagePulls: false\n"
                                                b"maxParallelImagePulls: 10\n").decode(),
                    "source": "/var/lib/kubelet/config.yaml"},
        "images": {"changed": False, "runtime": "docker", "loaded": [], "kept": ["docker.io/library/pause:3.9"]},
        "units": {"results": [{"item": "kubescale-local-ssd.service", "changed": False,
                               "status": {"UnitFileState": "enabled"}}]},
    }


def etcd_member(name="etcd-1", db=50 * 2 ** 20, quota=2 * 2 ** 30, healthy=True, all_healthy=True, alarms=()):
    members = [{"id": "a%d" % i, "name": "etcd-%d" % i, "healthy": healthy if i == 1 else True,
                "revision": 5000, "db_size": db} for i in (1, 2, 3)]
    facts = {"kubescale_etcd_local_disk": {"name": name, "data_dir": "/mnt/local-ssd/etcd", "quota_backend_bytes": quota,
                                           "endpoints": ["http://10.0.0.1:2379"], "snapshot_dir": None},
             "kubescale_local_ssd": {"mount": "/mnt/local-ssd", "fstype": "ext4", "label": "kubescale",
                                     "marker": "/m", "unit": "u"}}
    return {"facts": facts,
            "etcd": {"members": members, "voting": 3, "healthy": 3 if all_healthy else 2, "quorum": 2,
                     "has_quorum": True, "all_healthy": all_healthy, "leader_revision": 5000, "alarms": list(alarms)},
            "etcd_data": {"stat": {"exists": True, "dev": 2065}},
            "ssd_mount": {"stat": {"exists": True, "dev": 2065}}}


def statuses(checks):
    return {(c["area"], c["check"]): c["status"] for c in checks}


def red(checks):
    return [c for c in checks if c["status"] == "red"]


def test_a_converged_worker_is_all_green():
    checks = A.evaluate("cpu-1", "kube_node_cpu", worker(), now=NOW)
    assert checks and all(c["status"] == "green" for c in checks), red(checks)
    areas = {c["area"] for c in checks}
    assert areas == {"sysctl", "neighbours", "local_ssd", "runtime", "boot"}


def test_a_later_sysctl_file_is_red_naming_it():
    obs = worker()
    obs["sysctl"]["observed"]["net.ipv4.neigh.default.gc_thresh3"] = sysctl_key(
        boot="4096", winning="/etc/sysctl.d/99-zz-override.conf")
    bad = red(A.evaluate("cpu-1", "kube_node_cpu", obs, now=NOW))
    assert len(bad) == 1 and bad[0]["check"] == "net.ipv4.neigh.default.gc_thresh3"
    assert "/etc/sysctl.d/99-zz-override.conf sets 4096 at boot" in bad[0]["message"]


def test_live_drift_and_a_missing_persisted_value_are_red():
    obs = worker()
    obs["sysctl"]["observed"]["net.ipv4.neigh.default.gc_thresh1"] = sysctl_key(wanted="80000", live="128",
                                                                                persisted=None, boot=None)
    msg = red(A.evaluate("cpu-1", "kube_node_cpu", obs, now=NOW))[0]["message"]
    assert "has no value, wanted 80000" in msg and "live value 128, wanted 80000 (drift)" in msg


def test_persist_only_keys_are_green_and_say_so():
    obs = worker()
    for k in obs["sysctl"]["observed"].values():
        k["live"], k["live_status"] = None, "absent in this network namespace"
    checks = A.evaluate("cpu-1", "kube_node_cpu", obs, now=NOW)
    assert all(c["status"] == "green" for c in checks)
    assert any("not visible live here" in c["message"] for c in checks if c["area"] == "sysctl")


@pytest.mark.parametrize("usage,table_fulls,overflows,expected", [
    (0.5, 0, 0, "green"), (0.6, 0, 0, "amber"), (0.9, 0, 0, "red"), (0.1, 3, 0, "amber"), (0.1, 0, 2, "red")])
def test_neighbour_pressure(usage, table_fulls, overflows, expected):
    obs = worker()
    report = obs["neigh"]["ansible_facts"]["kubescale_neigh"]
    report["ipv4"].update(usage=usage, table_fulls=table_fulls)
    report["kernel_log_overflow_messages"] = overflows
    checks = A.evaluate("cpu-1", "kube_node_cpu", obs, now=NOW)
    assert A._worst(c["status"] for c in checks if c["area"] == "neighbours") == expected


def test_an_unmounted_ssd_is_red():
    obs = worker()
    obs["ssd"]["ansible_facts"]["kubescale_local_ssd"]["mounted_at"] = []
    bad = red(A.evaluate("cpu-1", "kube_node_cpu", obs, now=NOW))
    assert [(c["area"], c["check"]) for c in bad] == [("local_ssd", "mounted")]
    assert "not mounted at /mnt/local-ssd (mounted at: nowhere)" in bad[0]["message"]


def test_a_missing_image_is_red_with_its_reference():
    obs = worker()
    obs["images"].update(changed=True, loaded=["docker.io/library/pause:3.9"], kept=[])
    bad = red(A.evaluate("cpu-1", "kube_node_cpu", obs, now=NOW))
    assert len(bad) == 1 and "docker.io/library/pause:3.9" in bad[0]["message"]


def test_a_rewritten_kubelet_config_is_red():
    obs = worker()
    obs["kubelet"]["content"] = base64.b64encode(b"serializeImagePulls: true\n").decode()
    bad = red(A.evaluate("cpu-1", "kube_node_cpu", obs, now=NOW))
    assert {c["check"] for c in bad} == {"kubelet serializeImagePulls", "kubelet maxParallelImagePulls"}
    assert "kubeadm join" in bad[0]["message"]


def test_docker_settings_as_dockerd_reports_them():
    obs = worker()
    obs["docker"]["stdout"] = json.dumps({"DockerRootDir": "/var/lib/docker", "Driver": "overlay2",
                                          "CgroupDriver": "systemd", "LiveRestoreEnabled": True})
    bad = red(A.evaluate("cpu-1", "kube_node_cpu", obs, now=NOW))
    assert [c["check"] for c in bad] == ["docker DockerRootDir"]
    assert "/var/lib/docker" in bad[0]["message"] and "/mnt/local-ssd/docker" in bad[0]["message"]


def test_containerd_v2_and_v3_layouts():
    obs = worker()
    obs["facts"]["kubescale_containerd_tuning"] = {"root": "/mnt/local-ssd/containerd", "max_concurrent_downloads": 10,
                                                   "sandbox_image": "registry.k8s.io/pause:3.9"}
    obs["containerd"] = {"rc": 0, "stdout": 'version = 2\nroot = "/mnt/local-ssd/containerd"\n'
                         '[plugins."io.containerd.grpc.v1.cri"]\nmax_concurrent_downloads = 10\n'
                         'sandbox_image = "registry.k8s.io/pause:3.9"\n'}
    assert not red(A.evaluate("cpu-1", "kube_node_cpu", obs, now=NOW))
    obs["containerd"]["stdout"] = ('version = 3\nroot = "/var/lib/containerd"\n[plugins."io.containerd.cri.v1.images"]\n'
                                   'max_concurrent_downloads = 3\n[plugins."io.containerd.cri.v1.images".pinned_images]\n'
                                   'sandbox = "registry.k8s.io/pause:3.9"\n')
    assert {c["check"] for c in red(A.evaluate("cpu-1", "kube_node_cpu", obs, now=NOW))} == {
        "containerd root", "containerd max_concurrent_downloads"}


def test_a_disabled_boot_unit_and_a_failed_read_are_red():
    obs = worker()
    obs["units"]["results"][0].update(changed=True, status={"UnitFileState": "disabled"})
    obs["docker"] = {"rc": 1, "failed": False, "stderr": "Cannot connect to the Docker daemon"}
    bad = {c["check"]: c["message"] for c in red(A.evaluate("cpu-1", "kube_node_cpu", obs, now=NOW))}
    assert "not enabled (disabled)" in bad["kubescale-local-ssd.service"]
    assert "Cannot connect to the Docker daemon" in bad["dockerd"]


def test_etcd_member_health_quota_alarms_and_data_on_ssd():
    assert not red(A.evaluate("etcd-1", "etcd", etcd_member(), now=NOW))
    near = statuses(A.evaluate("etcd-1", "etcd", etcd_member(db=int(0.85 * 2 ** 30), quota=2 ** 30), now=NOW))
    assert near[("etcd", "db_vs_quota")] == "red"
    assert statuses(A.evaluate("etcd-1", "etcd", etcd_member(db=int(0.65 * 2 ** 30), quota=2 ** 30),
                               now=NOW))[("etcd", "db_vs_quota")] == "amber"
    down = A.evaluate("etcd-1", "etcd", etcd_member(healthy=False, all_healthy=False), now=NOW)
    assert statuses(down)[("etcd", "member")] == "red" and statuses(down)[("etcd", "quorum")] == "amber"
    # Seen from a healthy peer, the same cluster is amber only: red stays on the node whose member is down.
    peer = etcd_member(name="etcd-2", healthy=False, all_healthy=False)
    assert not red(A.evaluate("etcd-2", "etcd", peer, now=NOW))
    alarm = A.evaluate("etcd-1", "etcd", etcd_member(alarms=[{"member_id": "a1", "alarm": "NOSPACE"}]), now=NOW)
    assert "NOSPACE raised on member etcd-1 (etcd refuses writes)" in red(alarm)[0]["message"]
    off = etcd_member()
    off["etcd_data"]["stat"]["dev"] = 2049
    assert [c["check"] for c in red(A.evaluate("etcd-1", "etcd", off, now=NOW))] == ["data_on_ssd"]


def test_an_etcd_cluster_that_does_not_answer_is_red():
    obs = etcd_member()
    obs["etcd"] = {"failed": True, "msg": "context deadline exceeded"}
    bad = red(A.evaluate("etcd-1", "etcd", obs, now=NOW))
    assert bad[0]["check"] == "cluster" and "context deadline exceeded" in bad[0]["message"]


def test_snapshot_age():
    obs = etcd_member()
    obs["facts"]["kubescale_etcd_local_disk"]["snapshot_dir"] = "/var/backups/etcd"
    obs["etcd_snapshots"] = {"files": [{"mtime": NOW - 3600}, {"mtime": NOW - 90000}]}
    assert statuses(A.evaluate("etcd-1", "etcd", obs, now=NOW))[("etcd", "snapshot")] == "green"
    obs["etcd_snapshots"] = {"files": [{"mtime": NOW - 30 * 3600}]}
    assert statuses(A.evaluate("etcd-1", "etcd", obs, now=NOW))[("etcd", "snapshot")] == "amber"
    obs["etcd_snapshots"] = {"files": []}
    assert statuses(A.evaluate("etcd-1", "etcd", obs, now=NOW))[("etcd", "snapshot")] == "red"


def test_control_plane_overrides_present_and_answering():
    flags = {"--etcd-servers-overrides": "/events#https://e1:2383;https://e2:2383"}
    ok = {"facts": {}, "apiserver": {"flags": flags},
          "overrides": {"has_quorum": True, "all_healthy": True, "healthy": 2, "voting": 2}}
    assert statuses(A.evaluate("cp-1", "kube_control_plane", ok, now=NOW)) == {
        ("control_plane", "etcd_servers_overrides"): "green", ("control_plane", "events_etcd_answers"): "green"}
    missing = {"facts": {}, "apiserver": {"flags": {}}}
    assert red(A.evaluate("cp-1", "kube_control_plane", missing, now=NOW))[0]["check"] == "etcd_servers_overrides"
    assert not A.evaluate("cp-1", "kube_control_plane", missing, {"events_etcd_expected": False}, now=NOW)[0][
        "status"] == "red"
    broken = {"facts": {}, "apiserver": {"flags": {"--etcd-servers-overrides": "/events"}}}
    bad = red(A.evaluate("cp-1", "kube_control_plane", broken, now=NOW))
    assert bad[0]["check"] == "etcd_servers_overrides" and "is not valid" in bad[0]["message"]
    silent = copy.deepcopy(ok)
    silent["overrides"] = {"failed": True, "msg": "connection refused"}
    assert "https://e1:2383, https://e2:2383" in red(A.evaluate("cp-1", "kube_control_plane", silent, now=NOW))[0][
        "message"]


def test_an_unreachable_node_is_red():
    checks = A.evaluate("cpu-9", "kube_node_cpu", {"setup": {"unreachable": True, "msg": "ssh: connect timed out"}},
                        now=NOW)
    assert [(c["check"], c["status"]) for c in checks] == [("reachable", "red")]
    assert "ssh: connect timed out" in checks[0]["message"]


def test_a_node_without_data_is_red_and_document_counts():
    nodes = {"cpu-1": ("kube_node_cpu", A.evaluate("cpu-1", "kube_node_cpu", worker(), now=NOW)),
             "cpu-2": ("kube_node_cpu", A.evaluate("cpu-2", "kube_node_cpu", None, now=NOW)),
             "etcd-1": ("etcd", A.evaluate("etcd-1", "etcd", etcd_member(db=int(0.7 * 2 ** 30), quota=2 ** 30),
                                           now=NOW))}
    doc = A.document(nodes, {"neigh_red": 0.9}, generated_at="2026-12-01T00:00:00Z")
    assert doc["schema"] == "kubescale.tuning/audit/v1"
    assert doc["totals"] == {"green": 1, "amber": 1, "red": 1, "nodes": 3}
    assert doc["classes"]["kube_node_cpu"]["red"] == 1 and doc["classes"]["etcd"]["amber"] == 1
    assert list(doc["classes"]) == ["etcd", "kube_node_cpu"]
    assert doc["failing"][0]["node"] == "cpu-2" and doc["failing"][0]["status"] == "red"
    assert doc["thresholds"]["neigh_red"] == 0.9 and doc["thresholds"]["etcd_db_red"] == 0.8
    json.dumps(doc)


class _Collect(HTMLParser):
    def __init__(self):
        HTMLParser.__init__(self)
        self.tags, self.external = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for key, value in attrs:
            if key in ("src", "href") and value and not value.startswith("#"):
                self.external.append(value)


def test_the_page_is_self_contained_with_summary_table_and_plots():
    nodes = {"cpu-1": ("kube_node_cpu", A.evaluate("cpu-1", "kube_node_cpu", worker(), now=NOW)),
             "etcd-1": ("etcd", A.evaluate("etcd-1", "etcd", etcd_member(db=int(0.85 * 2 ** 30), quota=2 ** 30),
                                           now=NOW))}
    page = H.render(A.document(nodes))
    parser = _Collect()
    parser.feed(page)
    assert not parser.external
    assert parser.tags.count("svg") == 2 and "table" in parser.tags and "script" in parser.tags
    assert 'id="summary"' in page and 'id="failing"' in page and "etcd database vs quota" in page
    assert "85.0 %" in page and "not measured unless fleet_audit_measure_latency" in page


@pytest.mark.parametrize("p99,expected", [(0.4, "green"), (6.0, "amber"), (12.5, "red")])
def test_fdatasync_p99_when_measured(p99, expected):
    obs = worker()
    obs["latency"] = {"changed": False, "latency": {"path": "/mnt/local-ssd", "p99_ms": p99, "samples": 10000}}
    checks = [c for c in A.evaluate("cpu-1", "kube_node_cpu", obs, now=NOW) if c["check"] == "fdatasync_p99"]
    assert len(checks) == 1 and checks[0]["status"] == expected and checks[0]["value"] == p99
    page = H.render(A.document({"cpu-1": ("kube_node_cpu", A.evaluate("cpu-1", "kube_node_cpu", obs, now=NOW))}))
    assert 'aria-label="fdatasync p99 on the local SSDs"' in page and "1 SSDs measured" in page
