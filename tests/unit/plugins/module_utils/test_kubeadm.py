"""extraArgs in kubeadm's ClusterConfiguration, both layouts."""

import pytest
import yaml

from ansible_collections.kubescale.tuning.plugins.module_utils import _kubeadm as k

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
