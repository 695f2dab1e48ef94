"""Static pod flags and kube-apiserver's --etcd-servers-overrides as data."""

import pytest

from ansible_collections.kubescale.tuning.plugins.filter.etcd import etcd_overrides_servers
from ansible_collections.kubescale.tuning.plugins.module_utils.kube import static_pod as p

ARGV = ["kube-apiserver", "--advertise-address=10.0.0.4", "--etcd-servers=https://10.0.0.5:2379",
        "--secure-port=6443", "--profiling"]


def test_set_in_place_append_and_remove():
    new, changed = p.set_flags(ARGV, {"--etcd-servers": "https://e:2379", "--etcd-servers-overrides": "/events#x",
                                      "--profiling": None, "--secure-port": "6443"})
    assert new == ["kube-apiserver", "--advertise-address=10.0.0.4", "--etcd-servers=https://e:2379",
                   "--secure-port=6443", "--etcd-servers-overrides=/events#x"]
    assert changed == ["--etcd-servers", "--etcd-servers-overrides", "--profiling"]


def test_nothing_to_change():
    assert p.set_flags(ARGV, {"--secure-port": "6443"}) == (ARGV, [])
    assert p.set_flags(ARGV, {"--absent": None}) == (ARGV, [])


def test_duplicates_collapse():
    new, changed = p.set_flags(["x", "--a=1", "--a=2"], {"--a": "3"})
    assert new == ["x", "--a=3"] and changed == ["--a"]


@pytest.mark.parametrize("name", ["etcd", "-x", "--", "--a b", "--a=b"])
def test_bad_flag_names(name):
    with pytest.raises(p.PodError):
        p.set_flags(ARGV, {name: "1"})


def test_flag_values():
    assert p.flag_values(ARGV)["--etcd-servers"] == "https://10.0.0.5:2379"
    assert p.flag_values(ARGV)["--profiling"] is None


def test_find_container():
    pod = {"kind": "Pod", "spec": {"containers": [{"name": "a"}, {"name": "kube-apiserver", "command": []}]}}
    assert p.find_container(pod, "kube-apiserver")["name"] == "kube-apiserver"
    assert p.find_container(pod)["name"] == "a"
    with pytest.raises(p.PodError, match="no container named 'x'"):
        p.find_container(pod, "x")
    with pytest.raises(p.PodError, match="not a Pod"):
        p.find_container({"kind": "Deployment"})


@pytest.mark.parametrize("existing,want", [
    ("", "/events#https://e1:2383;https://e2:2383"),
    ("/events#https://old:2383", "/events#https://e1:2383;https://e2:2383"),
    ("coordination.k8s.io/leases#http://l:2379", "coordination.k8s.io/leases#http://l:2379,/events#https://e1:2383;https://e2:2383"),
    ("/pods#http://p:2379,/events#https://old:2383,apps/deployments#http://d:2379",
     "/pods#http://p:2379,/events#https://e1:2383;https://e2:2383,apps/deployments#http://d:2379"),
])
def test_overrides_merge(existing, want):
    assert p.merge_overrides(existing, "/events", ["https://e1:2383", "https://e2:2383"]) == want
    # merging again changes nothing
    assert p.merge_overrides(want, "/events", ["https://e1:2383", "https://e2:2383"]) == want


@pytest.mark.parametrize("existing,resource,servers", [
    ("events#x", "/events", ["a"]),          # existing entry without a group separator
    ("/events", "/events", ["a"]),           # no servers
    ("", "events", ["a"]),                   # resource without group
    ("", "/events", []),
])
def test_overrides_refused(existing, resource, servers):
    with pytest.raises(p.PodError):
        p.merge_overrides(existing, resource, servers)


ETCD_POD = {
    "kind": "Pod",
    "spec": {
        "containers": [{
            "name": "etcd",
            "command": ["etcd", "--data-dir=/var/lib/etcd", "--name=cp-1"],
            "volumeMounts": [{"name": "etcd-data", "mountPath": "/var/lib/etcd"},
                             {"name": "etcd-certs", "mountPath": "/etc/kubernetes/pki/etcd"}],
        }],
        "volumes": [
            {"name": "etcd-certs", "hostPath": {"path": "/etc/kubernetes/pki/etcd", "type": "DirectoryOrCreate"}},
            {"name": "etcd-data", "hostPath": {"path": "/var/lib/etcd", "type": "DirectoryOrCreate"}},
            {"name": "scratch", "emptyDir": {}},
        ],
    },
}


def pod_copy():
    import copy
    return copy.deepcopy(ETCD_POD)


def test_volumes_with_their_mount_paths():
    pod = pod_copy()
    assert p.volumes(pod, p.find_container(pod, "etcd")) == [
        {"name": "etcd-certs", "host_path": "/etc/kubernetes/pki/etcd", "mount_path": "/etc/kubernetes/pki/etcd"},
        {"name": "etcd-data", "host_path": "/var/lib/etcd", "mount_path": "/var/lib/etcd"},
    ]


def test_set_host_paths_changes_only_the_named_volume():
    pod = pod_copy()
    assert p.set_host_paths(pod, {"etcd-data": "/mnt/local-ssd/etcd"}) == ["etcd-data"]
    assert pod["spec"]["volumes"][1]["hostPath"] == {"path": "/mnt/local-ssd/etcd", "type": "DirectoryOrCreate"}
    assert pod["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] == "/var/lib/etcd"  # the container sees the same
    assert p.set_host_paths(pod, {"etcd-data": "/mnt/local-ssd/etcd"}) == []


@pytest.mark.parametrize("paths, message", [
    ({"etcd-dat": "/x"}, "no volume named 'etcd-dat'"),
    ({"scratch": "/x"}, "'scratch' is not a hostPath volume"),
    ({"etcd-data": "x"}, "'x' is not an absolute path"),
    ({"etcd-data": "/ok", "nope": "/x"}, "no volume named 'nope'"),
])
def test_set_host_paths_refuses_before_changing_anything(paths, message):
    pod = pod_copy()
    with pytest.raises(p.PodError, match=message):
        p.set_host_paths(pod, paths)
    assert pod == ETCD_POD


LOCKS = """1: POSIX  ADVISORY  WRITE 123 08:01:5678 0 EOF
2: OFDLCK ADVISORY  WRITE -1 fd:02:99 0 EOF
3: FLOCK  ADVISORY  WRITE 456 00:2a:1234 0 EOF
3: -> FLOCK  ADVISORY  WRITE 457 00:2a:1234 0 EOF
garbage
"""


def test_parse_locks():
    assert p.parse_locks(LOCKS) == {(8, 1, 5678), (0xfd, 2, 99), (0, 0x2a, 1234)}
    assert p.parse_locks("") == set()


def test_locked_files_sees_a_real_lock(tmp_path):
    import fcntl
    import os
    (tmp_path / "wal").mkdir()
    held = tmp_path / "wal" / "0.wal"
    held.write_text("x")
    (tmp_path / "db").write_text("y")
    with open("/proc/locks") as f:
        before = p.parse_locks(f.read())
    assert p.locked_files([str(tmp_path)], before) == []
    with open(held, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        with open("/proc/locks") as locks:
            now = p.parse_locks(locks.read())
        assert p.locked_files([str(tmp_path)], now) == [str(held)]
    st = os.stat(tmp_path / "db")
    assert p.locked_files([str(tmp_path)], {(os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)}) == [
        str(tmp_path / "db")]


MOUNTINFO = """22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 8:17 / /mnt/local-ssd rw,noatime shared:2 - ext4 /dev/sdb rw
31 22 0:40 / /var/lib/etcd rw,relatime shared:3 - btrfs /dev/sdc rw,subvol=/etcd
32 22 0:41 / /mnt/with\\040space rw - xfs /dev/sdd rw
"""


@pytest.mark.parametrize("path, kind", [
    ("/mnt/local-ssd/etcd", "ext4"),
    ("/mnt/local-ssd", "ext4"),
    ("/mnt/local-ssdx/etcd", "ext4"),  # not under /mnt/local-ssd: the root's
    ("/var/lib/etcd/member/wal", "btrfs"),
    ("/mnt/with space/x", "xfs"),
    ("/etc", "ext4"),
])
def test_fs_type(path, kind):
    assert p.fs_type(path, MOUNTINFO) == kind
    assert p.fs_type(path, "") is None


def test_overrides_servers_reads_one_resource_back():
    value = "/pods#https://a:2379,/events#https://e1:2383;https://e2:2383"
    assert etcd_overrides_servers(value, "/events") == ["https://e1:2383", "https://e2:2383"]
    assert etcd_overrides_servers(value, "/pods") == ["https://a:2379"]
    assert etcd_overrides_servers(value, "apps/deployments") == []
    assert etcd_overrides_servers("", "/events") == []
    assert etcd_overrides_servers(None, "/events") == []


def kubeadm_pod():
    """A manifest as kubeadm renders it: its own flags sorted, then the extraArgs in the configuration's order."""
    return {"kind": "Pod", "spec": {
        "containers": [{"name": "kube-apiserver", "command": [
            "kube-apiserver", "--advertise-address=10.0.0.4", "--etcd-servers=https://e:2379",
            "--secure-port=6443", "--shutdown-delay-duration=6s"],
            "env": [{"name": "Z", "value": "1"}],
            "volumeMounts": [{"name": "ca-certs", "mountPath": "/etc/ssl/certs"},
                             {"name": "k8s-certs", "mountPath": "/etc/kubernetes/pki"}]}],
        "volumes": [{"name": "ca-certs", "hostPath": {"path": "/etc/ssl/certs"}},
                    {"name": "k8s-certs", "hostPath": {"path": "/etc/kubernetes/pki"}}]}}


def test_kubeadm_order_leaves_a_kubeadm_manifest_as_it_is():
    pod = kubeadm_pod()
    c = pod["spec"]["containers"][0]
    assert p.kubeadm_order(pod, c, "command", ["shutdown-delay-duration"]) is False
    assert pod == kubeadm_pod()


def test_kubeadm_order_puts_new_extra_args_after_kubeadms_own_and_sorts_what_it_sorts():
    pod = kubeadm_pod()
    c = pod["spec"]["containers"][0]
    argv, _changed = p.set_flags(c["command"], {"--max-requests-inflight": "800", "--etcd-servers": "https://f:2379"})
    c["command"] = [argv[0], argv[-1]] + argv[1:-1]  # wherever an edit left it
    c["volumeMounts"].insert(0, {"name": "z-extra", "mountPath": "/z"})
    pod["spec"]["volumes"].insert(0, {"name": "z-extra", "hostPath": {"path": "/z"}})
    p.set_env(c, "A", "2")
    assert p.kubeadm_order(pod, c, "command", ["shutdown-delay-duration", "max-requests-inflight"]) is True
    assert c["command"] == ["kube-apiserver", "--advertise-address=10.0.0.4", "--etcd-servers=https://f:2379",
                            "--secure-port=6443", "--shutdown-delay-duration=6s", "--max-requests-inflight=800"]
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["ca-certs", "k8s-certs", "z-extra"]
    assert [m["name"] for m in c["volumeMounts"]] == ["ca-certs", "k8s-certs", "z-extra"]
    assert [e["name"] for e in c["env"]] == ["A", "Z"]


def test_kubeadm_order_keeps_etcds_mounts_in_kubeadms_literal_order():
    """kubeadm sorts etcd's volumes but writes its mounts data first, certificates second: sorted mounts would make
    `kubeadm upgrade apply` find the manifest changed and restart the member."""
    pod = {"spec": {"containers": [{"name": "etcd", "command": ["etcd", "--data-dir=/mnt/local-ssd/etcd"],
                                    "volumeMounts": [{"name": "etcd-certs", "mountPath": "/etc/kubernetes/pki/etcd"},
                                                     {"name": "etcd-data", "mountPath": "/mnt/local-ssd/etcd"}]}],
                    "volumes": [{"name": "etcd-data", "hostPath": {"path": "/mnt/local-ssd/etcd"}},
                                {"name": "etcd-certs", "hostPath": {"path": "/etc/kubernetes/pki/etcd"}}]}}
    c = pod["spec"]["containers"][0]
    assert p.kubeadm_order(pod, c, "command", []) is True
    assert [m["name"] for m in c["volumeMounts"]] == ["etcd-data", "etcd-certs"]
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["etcd-certs", "etcd-data"]
    assert p.kubeadm_order(pod, c, "command", []) is False


def test_set_mount_paths_moves_a_mount_and_refuses_an_unmounted_volume():
    pod = kubeadm_pod()
    c = pod["spec"]["containers"][0]
    assert p.set_mount_paths(c, {"k8s-certs": "/pki"}) == ["k8s-certs"]
    assert c["volumeMounts"][1]["mountPath"] == "/pki"
    assert p.set_mount_paths(c, {"k8s-certs": "/pki"}) == []
    with pytest.raises(p.PodError, match="mounts no volume named 'etcd-data'"):
        p.set_mount_paths(c, {"k8s-certs": "/other", "etcd-data": "/x"})
    assert c["volumeMounts"][1]["mountPath"] == "/pki"  # checked before anything was set
    with pytest.raises(p.PodError, match="not an absolute path"):
        p.set_mount_paths(c, {"k8s-certs": "pki"})


def test_set_env_sets_and_removes():
    c = {"name": "x"}
    assert p.set_env(c, "SHA", "1") is True and c["env"] == [{"name": "SHA", "value": "1"}]
    assert p.set_env(c, "SHA", "1") is False
    assert p.set_env(c, "SHA", None) is True and "env" not in c
