"""Static pod flags and kube-apiserver's --etcd-servers-overrides as data."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.kubescale.tuning.plugins.filter.etcd import etcd_servers_overrides
from ansible_collections.kubescale.tuning.plugins.module_utils import _static_pod as p

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
    assert etcd_servers_overrides(existing, "/events", ["https://e1:2383", "https://e2:2383"]) == want
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
    with pytest.raises(AnsibleFilterError):
        etcd_servers_overrides(existing, resource, servers)
