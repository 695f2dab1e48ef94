"""extraArgs in kubeadm's ClusterConfiguration, both layouts."""

import pytest
import yaml

from ansible_collections.kubescale.tuning.plugins.module_utils.kube import kubeadm as k

V1BETA3 = """apiVersion: kubeadm.k8s.io/v1beta3
kind: InitConfiguration
---
apiVersion: kubeadm.k8s.io/v1beta3
kind: ClusterConfiguration
apiServer:
  extraArgs:
    audit-log-path: /var/log/audit.log
"""
V1BETA4 = """apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
apiServer:
  extraArgs:
  - name: audit-log-path
    value: /var/log/audit.log
"""


def test_v1beta3_mapping():
    docs = list(yaml.safe_load_all(V1BETA3))
    cfg = k.cluster_configuration(docs)
    assert k.set_args(cfg, "apiServer", {"etcd-servers-overrides": "/events#https://e:2383"}) == [
        "etcd-servers-overrides"]
    assert cfg["apiServer"]["extraArgs"] == {"audit-log-path": "/var/log/audit.log",
                                             "etcd-servers-overrides": "/events#https://e:2383"}
    assert k.set_args(cfg, "apiServer", {"etcd-servers-overrides": "/events#https://e:2383"}) == []
    assert docs[0]["kind"] == "InitConfiguration"  # the other document is kept


def test_v1beta4_list():
    cfg = k.cluster_configuration(list(yaml.safe_load_all(V1BETA4)))
    assert k.set_args(cfg, "apiServer", {"etcd-servers-overrides": "/events#x", "audit-log-path": None}) == [
        "audit-log-path", "etcd-servers-overrides"]
    assert cfg["apiServer"]["extraArgs"] == [{"name": "etcd-servers-overrides", "value": "/events#x"}]
    assert k.get_args(cfg, "apiServer") == {"etcd-servers-overrides": "/events#x"}


def test_v1beta4_without_extra_args():
    cfg = k.cluster_configuration([{"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "ClusterConfiguration"}])
    assert k.set_args(cfg, "apiServer", {"a": "1"}) == ["a"]
    assert cfg["apiServer"]["extraArgs"] == [{"name": "a", "value": "1"}]


@pytest.mark.parametrize("docs", [[], [{"kind": "ClusterConfiguration", "apiVersion": "v1"}],
                                  [{"kind": "ClusterConfiguration", "apiVersion": "kubeadm.k8s.io/v1beta3"}] * 2])
def test_refused_documents(docs):
    with pytest.raises(k.KubeadmError):
        k.cluster_configuration(docs)


@pytest.mark.parametrize("name", ["--etcd-servers", "Etcd", "", "a b"])
def test_refused_names(name):
    cfg = k.cluster_configuration(list(yaml.safe_load_all(V1BETA4)))
    with pytest.raises(k.KubeadmError):
        k.set_args(cfg, "apiServer", {name: "x"})


def test_etcd_local_data_dir_and_extra_args_in_order():
    cfg = {"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "ClusterConfiguration",
           "etcd": {"local": {"extraArgs": [{"name": "name", "value": "etcd-1"}]}}}
    assert k.set_etcd_local(cfg, "/mnt/local-ssd/etcd", {"quota-backend-bytes": "8589934592"}) == [
        "dataDir", "quota-backend-bytes"]
    assert cfg["etcd"]["local"]["dataDir"] == "/mnt/local-ssd/etcd"
    assert k.arg_names(cfg, "etcd") == ["name", "quota-backend-bytes"]  # kubeadm appends them in this order
    assert k.set_etcd_local(cfg, "/mnt/local-ssd/etcd", {"quota-backend-bytes": "8589934592"}) == []
    # no etcd section yet (a stacked cluster with kubeadm's defaults): made
    bare = {"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "ClusterConfiguration"}
    assert k.set_etcd_local(bare, "/mnt/local-ssd/etcd") == ["dataDir"] and bare["etcd"]["local"]["dataDir"]


@pytest.mark.parametrize("cfg, data_dir, message", [
    ({"etcd": {"external": {"endpoints": ["https://e:2379"]}}}, "/x", "etcd is external"),
    ({}, "relative/etcd", "must be an absolute path"),
    ({"etcd": "nope"}, "/x", "etcd is not a mapping"),
])
def test_etcd_local_refusals(cfg, data_dir, message):
    with pytest.raises(k.KubeadmError, match=message):
        k.set_etcd_local(dict(cfg, apiVersion="kubeadm.k8s.io/v1beta4"), data_dir)


def test_arg_names_keep_the_configurations_order_once_each():
    cfg = {"apiServer": {"extraArgs": [{"name": "b", "value": "1"}, {"name": "a", "value": "2"},
                                       {"name": "b", "value": "3"}]}}
    assert k.arg_names(cfg, "apiServer") == ["b", "a"]
    assert k.arg_names({"scheduler": {"extraArgs": {"config": "/c"}}}, "scheduler") == ["config"]
    assert k.arg_names({}, "controllerManager") == []


def test_extra_env_is_set_replaced_and_removed():
    cfg = {"apiVersion": "kubeadm.k8s.io/v1beta4", "scheduler": {"extraEnvs": [{"name": "A", "value": "1"}]}}
    assert k.set_extra_env(cfg, "scheduler", "SHA", "abc") is True
    assert cfg["scheduler"]["extraEnvs"] == [{"name": "A", "value": "1"}, {"name": "SHA", "value": "abc"}]
    assert k.set_extra_env(cfg, "scheduler", "SHA", "abc") is False
    assert k.set_extra_env(cfg, "scheduler", "SHA", "def") is True
    assert cfg["scheduler"]["extraEnvs"][-1] == {"name": "SHA", "value": "def"}
    assert k.set_extra_env(cfg, "scheduler", "SHA", None) is True
    assert cfg["scheduler"]["extraEnvs"] == [{"name": "A", "value": "1"}]
