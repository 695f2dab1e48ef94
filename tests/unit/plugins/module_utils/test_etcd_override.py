"""etcd_servers_override's plan: both files parsed and both new texts made before either is written."""

import pytest
import yaml

from ansible_collections.kubescale.tuning.plugins.module_utils.etcd import override as o
from ansible_collections.kubescale.tuning.tests.unit.plugins.module_utils.test_kubeadm import V1BETA3

MANIFEST = """apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - name: kube-apiserver
    command:
    - kube-apiserver
    - --etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt
    - --etcd-certfile=/etc/kubernetes/pki/apiserver-etcd-client.crt
    - --etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key
    - --etcd-servers=https://10.0.0.2:2379
"""
KUBEADM = V1BETA3  # test_kubeadm's: an InitConfiguration, then the ClusterConfiguration
SERVERS = ["https://10.0.0.7:2383", "https://10.0.0.8:2383"]
WANT = "/events#https://10.0.0.7:2383;https://10.0.0.8:2383"
KUBEADM_TLS = {"--etcd-cafile": "/k/ca.crt", "--etcd-certfile": "/k/c.crt", "--etcd-keyfile": "/k/c.key"}


def plan(manifest=MANIFEST, kubeadm=KUBEADM, resource="/events", servers=None):
    return o.plan(yaml, manifest, "kube-apiserver", kubeadm, resource, servers or SERVERS, KUBEADM_TLS)


def command(text):
    return yaml.safe_load(text)["spec"]["containers"][0]["command"]


def test_both_files_get_the_override_and_the_tls_comes_from_the_manifest():
    got = plan()
    assert command(got["manifest"]["after"]) == command(MANIFEST) + ["--etcd-servers-overrides=" + WANT]
    assert got["manifest"]["before"] is None and got["manifest"]["value"] == WANT
    docs = list(yaml.safe_load_all(got["kubeadm"]["after"]))
    assert docs[0]["kind"] == "InitConfiguration"
    assert docs[1]["apiServer"]["extraArgs"] == {"audit-log-path": "/var/log/audit.log",
                                                 "etcd-servers-overrides": WANT}
    assert got["tls"] == {"--etcd-cafile": "/etc/kubernetes/pki/etcd/ca.crt",
                          "--etcd-certfile": "/etc/kubernetes/pki/apiserver-etcd-client.crt",
                          "--etcd-keyfile": "/etc/kubernetes/pki/apiserver-etcd-client.key"}


def test_wired_files_are_not_written_again():
    first = plan()
    again = plan(first["manifest"]["after"], first["kubeadm"]["after"])
    assert again["manifest"]["after"] is None and again["kubeadm"]["after"] is None
    assert again["manifest"]["before"] == WANT and again["kubeadm"]["before"] == WANT


def test_another_resources_override_is_kept_and_a_stale_one_replaced():
    text = MANIFEST + "    - --etcd-servers-overrides=/pods#https://p:2379,/events#https://old:2383\n"
    got = plan(text, None)
    assert got["manifest"]["value"] == "/pods#https://p:2379," + WANT
    assert got["manifest"]["before"] == "/pods#https://p:2379,/events#https://old:2383"
    assert got["kubeadm"] is None


def test_without_a_manifest_kubeadms_tls_files_are_used():
    got = plan(None)
    assert got["manifest"] is None and got["tls"] == KUBEADM_TLS
    assert got["kubeadm"]["value"] == WANT


@pytest.mark.parametrize("manifest,kubeadm,message", [
    (MANIFEST.replace("    - --etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key\n", ""), KUBEADM,
     "kube-apiserver has no --etcd-keyfile"),
    ("kind: Pod\nspec: [", KUBEADM, "the manifest does not parse as a Pod"),
    (MANIFEST, "kind: InitConfiguration\n", "kubeadm's configuration does not parse"),
    (MANIFEST, "apiVersion: v1\nkind: [", "kubeadm's configuration does not parse"),
])
def test_a_file_that_cannot_be_wired_fails_before_anything_is_written(manifest, kubeadm, message):
    with pytest.raises(o.WireError, match=message):
        plan(manifest, kubeadm)


def test_without_a_manifest_every_tls_file_must_be_given():
    with pytest.raises(o.WireError, match="tls_without_manifest: give --etcd-keyfile"):
        o.plan(yaml, None, "kube-apiserver", KUBEADM, "/events", SERVERS,
               {"--etcd-cafile": "/k/ca.crt", "--etcd-certfile": "/k/c.crt"})


def test_a_resource_without_a_group_fails():
    with pytest.raises(o.WireError, match="must be group/resource"):
        plan(resource="events")
