"""A component's settings where kubeadm renders its manifest from: a file on the node and kubeadm's record in the
cluster, planned (edited, validated by kubeadm, dry run) before anything is written, and written last."""

import io
import json

import pytest
import yaml
from ansible.module_utils import urls

from ansible_collections.kubescale.tuning.plugins.module_utils.kube import kubeadm_drift as drift
from ansible_collections.kubescale.tuning.plugins.module_utils.kube import kubeadm_record as rec
from ansible_collections.kubescale.tuning.plugins.module_utils.kube import kubeadm_sync as sync
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.kubeadm import set_args

CLUSTER = """apiServer:
  extraArgs:
  - name: shutdown-delay-duration
    value: 6s
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
"""
KUBELET = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
"""


class FakeClient(object):
    """kubeadm's two ConfigMaps as the API server keeps them, with every request it was sent."""

    def __init__(self, cluster=CLUSTER, kubelet=KUBELET, refuse=None):
        self.objects = {
            "kubeadm-config": {"metadata": {"name": "kubeadm-config", "resourceVersion": "7"},
                               "data": {"ClusterConfiguration": cluster}},
            "kubelet-config": {"metadata": {"name": "kubelet-config", "resourceVersion": "9"},
                               "data": {"kubelet": kubelet}},
        }
        self.sent = []
        self.refuse = refuse

    def call(self, method, path, body=None):
        name = path.split("/configmaps/")[1].split("?")[0]
        if method == "GET":
            obj = self.objects.get(name)
            return (200, json.loads(json.dumps(obj))) if obj else (404, {"message": "not found"})
        self.sent.append((method, path, body))
        if self.refuse:
            return self.refuse
        if body["metadata"]["resourceVersion"] != self.objects[name]["metadata"]["resourceVersion"]:
            return 409, {"message": "the object has been modified"}
        if "dryRun" not in path:
            self.objects[name] = dict(body, metadata=dict(body["metadata"], resourceVersion="10"))
        return 200, body


@pytest.fixture
def client(monkeypatch):
    fake = FakeClient()
    monkeypatch.setattr(sync, "connect", lambda yaml_mod, mode, kubeconfig, var="": None if mode == "never" else fake)
    return fake


def ok(argv):
    assert argv[1:4] == ["config", "validate", "--config"]
    return 0, "ok", ""


def edit_inflight(cfg):
    set_args(cfg, "apiServer", {"max-requests-inflight": "800"})


def test_the_record_is_validated_and_dry_run_before_anything_and_written_only_by_write(client):
    plan = sync.plan(yaml, ok, "/usr/bin/kubeadm", {"record": "auto"}, edit_inflight)
    assert plan.changed == ["ConfigMap kube-system/kubeadm-config (ClusterConfiguration)"]
    assert [p for _m, p, _b in client.sent] == ["/api/v1/namespaces/kube-system/configmaps/kubeadm-config?dryRun=All"]
    assert plan.extra_names("apiServer") == ["shutdown-delay-duration", "max-requests-inflight"]
    diff = plan.diffs()[0]
    assert "max-requests-inflight" in diff["after"] and "max-requests-inflight" not in diff["before"]
    assert plan.write() == ["ConfigMap kube-system/kubeadm-config (ClusterConfiguration)"]
    stored = yaml.safe_load(client.objects["kubeadm-config"]["data"]["ClusterConfiguration"])
    assert stored["apiServer"]["extraArgs"][-1] == {"name": "max-requests-inflight", "value": "800"}
    # planned again: nothing to send, not even a dry run
    client.sent.clear()
    again = sync.plan(yaml, ok, "/usr/bin/kubeadm", {"record": "auto"}, edit_inflight)
    assert again.changed == [] and client.sent == []


def test_kubeadms_refusal_in_its_own_words_and_nothing_sent(client):
    def refuse(argv):
        return 1, "", ("error: strict decoding error: unknown field \"apiServer.bogus\" in %s\n"
                       "To see the stack trace of this error execute with --v=5 or higher\n" % argv[-1])
    with pytest.raises(sync.SyncError, match=r'kubeadm refuses the new ClusterConfiguration: error: strict decoding '
                                             r'error: unknown field "apiServer.bogus" in the new configuration$'):
        sync.plan(yaml, refuse, "/usr/bin/kubeadm", {"record": "auto"}, edit_inflight)
    assert client.sent == []


def test_a_dry_run_the_api_server_refuses_fails_the_plan(client):
    client.refuse = (422, {"message": "ConfigMap \"kubeadm-config\" is invalid"})
    with pytest.raises(sync.SyncError, match=r"\(dry run\): HTTP 422 ConfigMap"):
        sync.plan(yaml, ok, "/usr/bin/kubeadm", {"record": "auto"}, edit_inflight)


def test_a_record_another_node_wrote_meanwhile_is_read_again_and_the_edit_applied_to_it(client):
    """Three control plane nodes of one run plan the same tuning: the second writer finds the record changed, reads
    it again, and has nothing left to send; another change made meanwhile is kept, not overwritten."""
    first = sync.plan(yaml, ok, "/usr/bin/kubeadm", {"record": "auto"}, edit_inflight)
    second = sync.plan(yaml, ok, "/usr/bin/kubeadm", {"record": "auto"}, edit_inflight)
    assert first.write() == second.changed
    client.sent.clear()
    assert second.write() == ["ConfigMap kube-system/kubeadm-config (ClusterConfiguration)"]
    assert [m for m, _p, _b in client.sent] == ["PUT"]  # the refused write; then nothing: already recorded

    # an operator's change between this plan and its write: kept, and this edit applied on top of it
    plan = sync.plan(yaml, ok, "/usr/bin/kubeadm", {"record": "auto"},
                     lambda cfg: set_args(cfg, "apiServer", {"max-mutating-requests-inflight": "400"}))
    other = yaml.safe_load(client.objects["kubeadm-config"]["data"]["ClusterConfiguration"])
    other["apiServer"]["extraArgs"].append({"name": "audit-log-maxage", "value": "7"})
    client.objects["kubeadm-config"]["data"]["ClusterConfiguration"] = yaml.safe_dump(other)
    client.objects["kubeadm-config"]["metadata"]["resourceVersion"] = "11"
    plan.write()
    stored = yaml.safe_load(client.objects["kubeadm-config"]["data"]["ClusterConfiguration"])
    assert {a["name"] for a in stored["apiServer"]["extraArgs"]} == {
        "shutdown-delay-duration", "max-requests-inflight", "audit-log-maxage", "max-mutating-requests-inflight"}


def test_a_record_that_keeps_changing_fails_naming_it(client):
    plan = sync.plan(yaml, ok, "/usr/bin/kubeadm", {"record": "auto"}, edit_inflight)
    real_call = client.call

    def racing(method, path, body=None):
        if method == "PUT":  # someone writes before every one of ours
            meta = client.objects["kubeadm-config"]["metadata"]
            meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        return real_call(method, path, body)
    client.call = racing
    with pytest.raises(sync.SyncError, match="kept changing under 5 writes; run again"):
        plan.write()


def test_a_file_and_the_record_both_edited_the_file_first(client, tmp_path):
    path = tmp_path / "kubeadmcfg.yaml"
    path.write_text("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n---\n" + CLUSTER)
    plan = sync.plan(yaml, ok, "/usr/bin/kubeadm", {"config": str(path), "record": "auto"}, edit_inflight)
    assert plan.changed == [str(path), "ConfigMap kube-system/kubeadm-config (ClusterConfiguration)"]
    assert plan.write() == plan.changed
    docs = list(yaml.safe_load_all(path.read_text()))
    assert docs[0]["kind"] == "InitConfiguration" and docs[1]["apiServer"]["extraArgs"][-1]["value"] == "800"


def test_never_and_no_kubeadm_config(client, tmp_path):
    plan = sync.plan(yaml, ok, "/usr/bin/kubeadm", {"record": "never", "config": str(tmp_path / "absent.yaml")},
                     edit_inflight)
    assert plan.sources == [] and plan.extra_names("apiServer") is None and client.sent == []


def test_the_record_needs_kubeadm_to_validate_with(client):
    with pytest.raises(sync.SyncError, match="no kubeadm on this node"):
        sync.plan(yaml, ok, None, {"record": "auto"}, edit_inflight)


def test_the_kubelets_record_takes_the_pull_settings_validated_beside_the_cluster_configuration(client):
    seen = []

    def validate(argv):
        with open(argv[-1]) as f:
            seen.append(list(yaml.safe_load_all(f)))
        return 0, "", ""
    plan = sync.plan_kubelet(yaml, validate, "/usr/bin/kubeadm", {"record": "auto"},
                             {"serializeImagePulls": False, "maxParallelImagePulls": 4})
    assert [d["kind"] for d in seen[0]] == ["ClusterConfiguration", "KubeletConfiguration"]
    assert plan.changed == ["ConfigMap kube-system/kubelet-config (kubelet)"]
    plan.write()
    stored = yaml.safe_load(client.objects["kubelet-config"]["data"]["kubelet"])
    assert stored["serializeImagePulls"] is False and stored["maxParallelImagePulls"] == 4
    assert stored["cgroupDriver"] == "systemd"  # the rest kept
    assert sync.plan_kubelet(yaml, validate, "/usr/bin/kubeadm", {"record": "auto"},
                             {"serializeImagePulls": False}).changed == []


def test_connect_modes(tmp_path):
    assert rec.connect(yaml, "never", str(tmp_path / "admin.conf")) is None
    assert rec.connect(yaml, "auto", str(tmp_path / "admin.conf")) is None  # not a control plane node
    with pytest.raises(rec.RecordError, match="kubelet_pulls_kubeadm_record is always, and .* does not exist"):
        rec.connect(yaml, "always", str(tmp_path / "admin.conf"), "kubelet_pulls_")
    with pytest.raises(rec.RecordError, match="must be one of"):
        rec.connect(yaml, "sometimes", str(tmp_path / "admin.conf"))


def test_read_auto_takes_a_missing_configmap_as_not_kubeadm():
    fake = FakeClient()
    del fake.objects["kubelet-config"]
    assert rec.read(fake, rec.KUBELET, "auto") is None
    with pytest.raises(rec.RecordError, match="HTTP 404"):
        rec.read(fake, rec.KUBELET, "always")


def test_drift_names_what_kubeadm_upgrade_would_revert():
    cfg = yaml.safe_load(CLUSTER)
    pod = {"kind": "Pod", "spec": {"containers": [{"name": "kube-apiserver", "command": [
        "kube-apiserver", "--etcd-servers-overrides=/events#https://e:2383", "--shutdown-delay-duration=6s"]}]}}
    found = drift.component_drift(pod, "kube-apiserver", cfg, "apiServer")
    assert found == [dict(setting="--etcd-servers-overrides", node="/events#https://e:2383", kubeadm=None)]
    assert drift.describe(found[0], "kube-apiserver", "the record").startswith(
        "kubeadm upgrade would revert kube-apiserver --etcd-servers-overrides: the node has /events#")
    set_args(cfg, "apiServer", {"etcd-servers-overrides": "/events#https://e:2383"})
    assert drift.component_drift(pod, "kube-apiserver", cfg, "apiServer") == []


def test_etcd_drift_reads_data_dir_from_etcd_local():
    pod = {"kind": "Pod", "spec": {"containers": [{"name": "etcd", "command": [
        "etcd", "--data-dir=/mnt/local-ssd/etcd", "--quota-backend-bytes=8589934592"]}]}}
    found = drift.component_drift(pod, "etcd", {"etcd": {"local": {}}}, "etcd")
    assert [(d["setting"], d["kubeadm"]) for d in found] == [
        ("--data-dir", "/var/lib/etcd"), ("--quota-backend-bytes", None)]
    local = {"etcd": {"local": {"dataDir": "/mnt/local-ssd/etcd",
                                "extraArgs": [{"name": "quota-backend-bytes", "value": "8589934592"}]}}}
    assert drift.component_drift(pod, "etcd", local, "etcd") == []
    assert drift.kubelet_drift({"serializeImagePulls": False}, {}) == [
        dict(setting="serializeImagePulls", node=False, kubeadm=None)]


def test_a_request_the_load_balancer_drops_or_an_api_server_sheds_is_asked_again(tmp_path, monkeypatch):
    """The controlPlaneEndpoint's load balancer sends a connection to an API server that is stopping until its health
    check has seen it go: the connection is closed, and asked again it reaches one that answers. A 503 too; a 409 (the
    write was applied before its answer was lost) is an answer, never asked again; a connection that keeps failing
    fails naming how often it was asked."""
    import ssl as ssl_mod

    conf = tmp_path / "admin.conf"
    conf.write_text(yaml.safe_dump({"current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k"}}],
                                    "clusters": [{"name": "k", "cluster": {"server": "https://lb:6443"}}]}))
    answers, slept = [], []

    class Answer(object):
        def __init__(self, status, body):
            self.status, self.body = status, body

        def read(self):
            return json.dumps(self.body).encode()

        def close(self):
            pass

    def fake_open(_self, method, url, **_kw):
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        if answer[0] >= 400:
            raise rec.HTTPError(url, answer[0], "x", {}, io.BytesIO(json.dumps(answer[1]).encode()))
        return Answer(*answer)
    monkeypatch.setattr(urls.Request, "open", fake_open)
    client = rec.Client(yaml, str(conf), sleep=slept.append)
    answers[:] = [ssl_mod.SSLEOFError(8, "EOF occurred in violation of protocol"), (503, {}), (200, {"ok": 1})]
    assert client.call("GET", "/api") == (200, {"ok": 1}) and slept == [1, 2]
    answers[:] = [(409, {"message": "conflict"})]
    assert client.call("PUT", "/api", {})[0] == 409
    answers[:] = [ConnectionResetError(104, "reset")] * 6
    slept.clear()
    with pytest.raises(rec.RecordError, match=r"does not answer: .*reset.* \(asked 6 times in 30 s\)"):
        client.call("GET", "/api")
    assert slept == list(rec.RETRY_PAUSES)


def test_a_record_changed_between_its_read_and_the_dry_run_is_read_again_and_planned_on_what_is_there(client):
    """A run that died, whose node finished its own write right after the next run read the record: the next run's
    dry run finds the record changed, reads it again and plans on it - nothing left to send when it holds the edit."""
    real_call = client.call
    raced = []

    def racing(method, path, body=None):
        if method == "PUT" and "dryRun" in path and not raced:  # the other writer's change lands before our dry run
            raced.append(1)
            cfg = yaml.safe_load(client.objects["kubeadm-config"]["data"]["ClusterConfiguration"])
            edit_inflight(cfg)
            client.objects["kubeadm-config"]["data"]["ClusterConfiguration"] = yaml.safe_dump(cfg)
            meta = client.objects["kubeadm-config"]["metadata"]
            meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        return real_call(method, path, body)
    client.call = racing
    plan = sync.plan(yaml, ok, "/usr/bin/kubeadm", {"record": "auto"}, edit_inflight)
    assert raced and plan.changed == [] and plan.write() == []
