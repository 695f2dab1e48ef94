"""Against the lab: the Events etcd cluster (the etcd_events group: three members by default; LAB_ETCD_EVENTS_NODES=1
makes it one) speaks TLS with client certificates only, kube-apiserver's own etcd client certificate on cp-1
is trusted, kube-apiserver's manifest (kubeadm's) gets exactly the override, and so do kubeadm's configuration file and
its record (the kubeadm-config ConfigMap), in the order kubeadm renders them; nothing is wired (or changed) when the
cluster is down or the input is bad. Runs after `make site` converged the lab. A member wiped, or changed behind the
runs' back: test_events_members.py."""

import hashlib
import json
import re

import pytest
import yaml
from events_lab import PKI, apiserver_etcdctl, events_url, events_urls, playbook
from kube import kubectl
from labnode import lab_ip, node

MANIFEST = "/etc/kubernetes/manifests/kube-apiserver.yaml"
KUBEADM_CONFIG = "/etc/kubernetes/kubeadm-config.yaml"

pytestmark = [pytest.mark.usefixtures("lab"),
              pytest.mark.usefixtures("control_plane_and_events_lock")]


def manifest_command():
    pod = yaml.safe_load(node("cp-1", "cat", MANIFEST).stdout)
    return pod["spec"]["containers"][0]["command"]


def without_overrides(command):
    return [a for a in command if not a.startswith("--etcd-servers-overrides=")]


def record():
    """kubeadm's record: the kubeadm-config ConfigMap (its resourceVersion) and its ClusterConfiguration."""
    cm = json.loads(kubectl("get", "configmap", "-n", "kube-system", "kubeadm-config", "-o", "json").stdout)
    return cm["metadata"]["resourceVersion"], yaml.safe_load(cm["data"]["ClusterConfiguration"])


def put_record(cfg):
    cm = json.loads(kubectl("get", "configmap", "-n", "kube-system", "kubeadm-config", "-o", "json").stdout)
    cm["data"]["ClusterConfiguration"] = yaml.safe_dump(cfg, default_flow_style=False, sort_keys=False)
    kubectl("replace", "-f", "-", stdin=json.dumps(cm))


def extra_args(cfg):
    return [(a["name"], a["value"]) for a in cfg["apiServer"].get("extraArgs") or []]


def put_manifest(command):
    """kube-apiserver's manifest with this command, written as an operator would (atomically), and the API server
    waited for."""
    pod = yaml.safe_load(node("cp-1", "cat", MANIFEST).stdout)
    pod["spec"]["containers"][0]["command"] = command
    node("cp-1", "sh", "-c", "cat > /etc/kubernetes/.apiserver.tmp && mv /etc/kubernetes/.apiserver.tmp " + MANIFEST,
         stdin=yaml.safe_dump(pod, default_flow_style=False, sort_keys=False))


def sha(host, *paths):
    return hashlib.sha256(node(host, "cat", *paths).stdout.encode()).hexdigest()


def test_tls_with_the_apiservers_client_certificate_and_nothing_else():
    put = apiserver_etcdctl("put", "/registry/events/default/kubescale-test", "seen")
    assert put.returncode == 0, put.stderr
    got = apiserver_etcdctl("get", "/registry/events/default/kubescale-test", "--print-value-only")
    assert got.stdout.strip() == "seen"
    # plain HTTP on the client port: refused
    plain = apiserver_etcdctl("get", "x", url="http://%s:2383" % lab_ip("etcd-events-1"), tls=False)
    assert plain.returncode != 0
    # TLS without a client certificate: refused (client-cert-auth)
    anon = node("cp-1", "etcdctl", "--endpoints=" + ",".join(events_urls()), "--cacert=%s/etcd/ca.crt" % PKI,
                "--command-timeout=5s", "--dial-timeout=3s", "get", "x", check=False)
    assert anon.returncode != 0
    # its own ports, the main etcd's untouched; data on the SSD; metrics over plain HTTP on 2385
    env = node("etcd-events-1", "cat", "/etc/kubescale/etcd-events.env").stdout
    assert 'ETCD_DATA_DIR="/mnt/local-ssd/etcd-events"' in env and 'ETCD_CLIENT_CERT_AUTH="true"' in env
    assert node("etcd-events-1", "findmnt", "-n", "-o", "SOURCE", "-T", "/mnt/local-ssd/etcd-events").stdout.strip() \
        == "/dev/sdb"
    metrics = node("etcd-events-1", "python3", "-c", "import urllib.request as u; print(u.urlopen("
                   "'http://%s:2385/metrics').read().decode())" % lab_ip("etcd-events-1")).stdout
    assert "etcd_server_has_leader 1" in metrics


def test_manifest_gets_exactly_the_override_in_kubeadms_order():
    command = manifest_command()
    overrides = [a for a in command if a.startswith("--etcd-servers-overrides=")]
    assert overrides == ["--etcd-servers-overrides=/events#" + events_url()]
    # kubeadm renders its own flags sorted, then the ClusterConfiguration's extraArgs in their order
    extra = extra_args(record()[1])
    assert command[len(command) - len(extra):] == ["--%s=%s" % kv for kv in extra]
    own = command[1:len(command) - len(extra)]
    assert own == sorted(own)


def test_kubeadm_configuration_and_record_get_the_same_override_in_extra_args():
    docs = list(yaml.safe_load_all(node("cp-1", "cat", KUBEADM_CONFIG).stdout))
    assert [d["kind"] for d in docs] == ["InitConfiguration", "ClusterConfiguration"]
    assert ("etcd-servers-overrides", "/events#" + events_url()) in extra_args(docs[1])
    assert docs[1]["etcd"]["external"]["certFile"] == PKI + "/apiserver-etcd-client.crt"
    assert ("etcd-servers-overrides", "/events#" + events_url()) in extra_args(record()[1])


def test_an_existing_override_is_kept_and_a_stale_events_one_replaced():
    # another resource already served by other etcd servers (here the main etcd itself, so the API server stays
    # ready), and a stale Events entry
    members = ("etcd-kubeadm-1", "etcd-kubeadm-2", "etcd-kubeadm-3")
    leases = "coordination.k8s.io/leases#" + ";".join("https://%s:2379" % lab_ip(m) for m in members)
    wired = manifest_command()
    _version, cfg = record()
    put_manifest(without_overrides(wired) + ["--etcd-servers-overrides=/events#https://10.9.9.9:2383," + leases])
    try:
        proc = playbook("tests/integration/events_role.yml", "-l", "cp-1")
        assert proc.returncode == 0, proc.stdout[-3000:]
        overrides = [a for a in manifest_command() if a.startswith("--etcd-servers-overrides=")]
        assert overrides == ["--etcd-servers-overrides=/events#%s,%s" % (events_url(), leases)]
    finally:
        # back as site left them for the other tests: the manifest and the record (the role merged the other
        # resource's override into it)
        put_record(cfg)
        put_manifest(wired)
    assert playbook("tests/integration/events_role.yml", "-l", "cp-1").returncode == 0
    assert manifest_command() == wired


def test_events_cluster_down_leaves_the_manifest_and_kubeadms_record_as_they_were():
    # unwired everywhere kubeadm and the kubelet read it: the manifest, the file, the record
    put_manifest(without_overrides(manifest_command()))
    docs = list(yaml.safe_load_all(node("cp-1", "cat", KUBEADM_CONFIG).stdout))
    docs[1]["apiServer"]["extraArgs"] = [a for a in docs[1]["apiServer"]["extraArgs"]
                                         if a["name"] != "etcd-servers-overrides"]
    node("cp-1", "sh", "-c", "cat > " + KUBEADM_CONFIG,
         stdin=yaml.safe_dump_all(docs, default_flow_style=False, sort_keys=False))
    _version, cfg = record()
    cfg["apiServer"]["extraArgs"] = [a for a in cfg["apiServer"]["extraArgs"] if a["name"] != "etcd-servers-overrides"]
    put_record(cfg)
    before = (sha("cp-1", MANIFEST), sha("cp-1", KUBEADM_CONFIG), record()[0])
    node("etcd-events-1", "systemctl", "stop", "etcd-events")
    try:
        proc = playbook("tests/integration/events_role.yml", "-l", "cp-1")
        assert proc.returncode != 0
        assert "The Events etcd cluster does not answer healthy from this node" in proc.stdout, proc.stdout[-3000:]
        assert "%s and %s and ConfigMap kube-system/kubeadm-config (ClusterConfiguration) were left as they were" % (
            MANIFEST, KUBEADM_CONFIG) in proc.stdout.replace("\n", " ").replace("  ", " "), proc.stdout[-3000:]
        assert (sha("cp-1", MANIFEST), sha("cp-1", KUBEADM_CONFIG), record()[0]) == before
    finally:
        node("etcd-events-1", "systemctl", "start", "etcd-events")
    proc = playbook("tests/integration/events_role.yml", "-l", "cp-1")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "--etcd-servers-overrides=/events#" + events_url() in manifest_command()
    docs = list(yaml.safe_load_all(node("cp-1", "cat", KUBEADM_CONFIG).stdout))
    assert ("etcd-servers-overrides", "/events#" + events_url()) in extra_args(docs[1])
    assert ("etcd-servers-overrides", "/events#" + events_url()) in extra_args(record()[1])


@pytest.mark.parametrize("play,extra,message", [
    ("etcd_events", "events_etcd_client_port=2379", "events_etcd ports 2379 clash with the main etcd"),
    ("etcd_events", "events_etcd_metrics_port=2381", "events_etcd ports 2381 clash with the main etcd"),
    ("etcd_events", "events_etcd_peer_port=2383", "events_etcd_client_port, events_etcd_peer_port and "
     "events_etcd_metrics_port must differ"),
    ("etcd_events", "events_etcd_client_port=70000", "must be ports (1-65535)"),
    ("etcd_events", '{"events_etcd_members": ["etcd-events-1", "cp-1"]}', "events_etcd_members has 2 members: give an "
     "odd number"),
    # the node answers this one (kubescale.tuning.etcd_start_info), before node_state places anything
    ("etcd_events", "events_etcd_binary=/usr/bin/no-etcd", "events_etcd_binary: /usr/bin/no-etcd is not an executable "
     "on this node"),
    ("etcd_events", "events_etcd_quota_backend_bytes=8X", "events_etcd_quota_backend_bytes: '8X' is not a size"),
    # the argument spec answers this one (choices), before any task runs
    ("etcd_events", "events_etcd_auto_compaction_mode=daily", "events_etcd_auto_compaction_mode must be one of: "
     "periodic, revision, got: daily"),
    ("control_plane", '{"events_etcd_members": ["ghost-1"]}', "events_etcd_members: ghost-1 not in the inventory"),
    ("control_plane", "events_etcd_apiserver_resource=events", "events_etcd_apiserver_resource (events) must be "
     "group/resource"),
])
def test_bad_input_changes_nothing(play, extra, message):
    files = ["/etc/kubescale/etcd-events.env", "/etc/systemd/system/etcd-events.service"]
    before = (sha("etcd-events-1", *files), sha("cp-1", MANIFEST, KUBEADM_CONFIG), record()[0])
    host = "etcd-events-1" if play == "etcd_events" else "cp-1"
    proc = playbook("tests/integration/events_role.yml", "-l", host, "-e", extra)
    assert proc.returncode != 0
    assert message in proc.stdout, proc.stdout[-2500:]
    assert "Nothing was changed" in proc.stdout or "must be one of" in message
    assert (sha("etcd-events-1", *files), sha("cp-1", MANIFEST, KUBEADM_CONFIG), record()[0]) == before
    assert re.search(r"%s\s+: ok=\d+\s+changed=0 " % host, proc.stdout)
