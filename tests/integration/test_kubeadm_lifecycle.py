"""The cluster's own lifecycle keeps every tuning: after `make site`, the real kubeadm upgrades the lab the way an
operator does, and every tuning is still in force where it acts.

- `kubeadm upgrade apply` (to the release it runs) on the first control plane node, `kubeadm upgrade node` on the
  others and on the workers, and on each external etcd host the upstream guide's upgrade: `kubeadm init phase etcd
  local --config` with its own configuration file. Every command names kubeadm's patches directory, as an operator's
  (or an autoscaler's) does.
- Before: a change kubeadm would refuse is refused before anything changes; kubeadm_drift finds nothing kubeadm would
  revert. During: no read polled through the controlPlaneEndpoint
  fails (with more than one control plane node; with one, the failures are counted and shown). After: every static
  pod manifest is the one the collection wrote (kubeadm found them equal and restarted nothing); Events are stored in
  the Events etcd; the scheduler runs the bin-packing profile; kube-apiserver its inflight limits; every etcd member
  runs from its SSD with its quota and every key; every kubelet's configuration has serializeImagePulls false; a site
  run changes nothing. The whole-lab audit that make lab-test runs next (test_audit_fleet.py) is all green after it,
  kubeadm's record included.

Run while nothing else does (make lab-test, after site_twice.sh), in order.
"""

import json
import os
import subprocess
import threading
import time
import uuid

import api_reads
import json_report
import pytest
import yaml
from kube import kubectl, wait_for
from labnode import HOSTS, REPO, hosts_of, lab_ip, node

from lab import controlplane, kubeadm

pytestmark = [pytest.mark.usefixtures("lab"),
              pytest.mark.usefixtures("control_plane_lock")]
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
           ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"))
SSD_DIR = "/mnt/local-ssd/etcd"
QUOTA = str(8 * 1024 ** 3)
# The lab's containers cannot give these checks a real part (lab/kubeadm.py, PREFLIGHT_IGNORED): the host's cgroup
# v1 kernel, and images from a registry the lab cannot reach.
IGNORED = "--ignore-preflight-errors=SystemVerification,ImagePull"
ETCD_TLS = ["--cacert=/etc/kubernetes/pki/etcd/ca.crt", "--cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt",
            "--key=/etc/kubernetes/pki/etcd/healthcheck-client.key"]
APISERVER_TLS = ["--cacert=/etc/kubernetes/pki/etcd/ca.crt", "--cert=/etc/kubernetes/pki/apiserver-etcd-client.crt",
                 "--key=/etc/kubernetes/pki/apiserver-etcd-client.key"]


CPS = hosts_of("kube_control_plane")
WORKERS = hosts_of("kube_node_cpu", "kube_node_gpu")
ETCD_HOSTS = hosts_of("etcd_kubeadm")


def manifests():
    """Every static pod kubeadm renders on the control plane nodes and the external etcd hosts, as the kubelet reads
    it (the pod, not the file's layout), with the process running it."""
    out = {}
    for host, name in [(h, n) for h in CPS for n in controlplane.MANIFESTS] + [(h, "etcd") for h in ETCD_HOSTS]:
        pod = yaml.safe_load(node(host, "cat", "/etc/kubernetes/manifests/%s.yaml" % name).stdout)
        out[(host, name)] = (pod, node(host, "pgrep", "-f", "^%s " % name).stdout.strip())
    return out


def cmdline(host, binary):
    return node(host, "sh", "-c", "tr '\\0' '\\n' < /proc/$(pgrep -x %s)/cmdline" % binary).stdout.splitlines()


def drift(host, *args):
    """kubescale.tuning.kubeadm_drift's result on one lab node."""
    proc = subprocess.run(["ansible", host, "-i", HOSTS, "-b", "-m", "kubescale.tuning.kubeadm_drift"]
                          + (["-a", " ".join(args)] if args else []), cwd=REPO, capture_output=True, text=True,
                          check=False, env=dict(ENV, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="json"))
    return json_report.first(proc.stdout, host)


def kubeadm_on(host, *args, what):
    proc = node(host, "kubeadm", *args, check=False)
    assert proc.returncode == 0, "%s on %s:\n%s\n%s" % (what, host, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc.stdout


def record_version():
    return kubectl("get", "configmap", "-n", "kube-system", "kubeadm-config", "-o",
                   "jsonpath={.metadata.resourceVersion}").stdout


def put_record(text):
    cm = json.loads(kubectl("get", "configmap", "-n", "kube-system", "kubeadm-config", "-o", "json").stdout)
    cm["data"]["ClusterConfiguration"] = text
    kubectl("replace", "-f", "-", stdin=json.dumps(cm))


def apiserver_load(*extra):
    return subprocess.run(["ansible-playbook", "tests/integration/apiserver_role.yml", "-l", CPS[0]] + list(extra),
                          cwd=REPO, env=ENV, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("where", ["file", "record"])
def test_a_change_kubeadm_refuses_is_refused_before_anything_changes(where):
    """A ClusterConfiguration kubeadm would refuse (a field it does not know, as a typo by hand leaves one) is checked
    with the node's kubeadm config validate before anything is written: new inflight limits are refused in kubeadm's own
    words, and the manifest, the file, the record and the running API server stay as they were."""
    config = "/etc/kubernetes/kubeadm-config.yaml"
    saved_file = node(CPS[0], "cat", config).stdout
    saved_record = kubectl("get", "configmap", "-n", "kube-system", "kubeadm-config", "-o",
                           "jsonpath={.data.ClusterConfiguration}").stdout
    if where == "file":
        docs = list(yaml.safe_load_all(saved_file))
        docs[1]["apiServer"]["extraArg"] = [{"name": "typo", "value": "1"}]
        node(CPS[0], "sh", "-c", "cat > " + config, stdin=yaml.safe_dump_all(docs, sort_keys=False))
    else:
        cfg = yaml.safe_load(saved_record)
        cfg["apiServer"]["extraArg"] = [{"name": "typo", "value": "1"}]
        put_record(yaml.safe_dump(cfg, sort_keys=False))
    try:
        before = (node(CPS[0], "cat", config).stdout,
                  node(CPS[0], "cat", "/etc/kubernetes/manifests/kube-apiserver.yaml").stdout, record_version(),
                  node(CPS[0], "pgrep", "-f", "^kube-apiserver ").stdout)
        proc = apiserver_load("-e", "apiserver_load_max_requests_inflight=900")
        assert proc.returncode != 0, proc.stdout[-3000:]
        out = " ".join(proc.stdout.split())
        assert "kubeadm refuses the new ClusterConfiguration" in out and 'unknown field "apiServer.extraArg"' in out, \
            proc.stdout[-3000:]
        assert "Nothing was changed" in out
        assert (node(CPS[0], "cat", config).stdout,
                node(CPS[0], "cat", "/etc/kubernetes/manifests/kube-apiserver.yaml").stdout, record_version(),
                node(CPS[0], "pgrep", "-f", "^kube-apiserver ").stdout) == before
    finally:
        node(CPS[0], "sh", "-c", "cat > " + config, stdin=saved_file)
        put_record(saved_record)


class ApiPoller(threading.Thread):
    """Reads through the controlPlaneEndpoint (the load balancer), a new connection each, until stopped: site_twice.sh's
    reads (api_reads.py), with the controller's admin.conf."""

    def __init__(self):
        super().__init__(daemon=True)
        self.ok, self.failed, self.stopping = 0, [], threading.Event()
        self.api = api_reads.client(controlplane.ADMIN_CONF)

    def run(self):
        while not self.stopping.is_set():
            why = api_reads.read(self.api)
            if not why:
                self.ok += 1
            else:
                self.failed.append("%s %s" % (time.strftime("%T"), why))
            time.sleep(0.3)

    def stop(self):
        self.stopping.set()
        self.join()


@pytest.fixture(scope="module")
def upgraded():
    """The lab before (its manifests), then upgraded by kubeadm with reads polled throughout."""
    wait_for("kube-apiserver /readyz through the endpoint",
             lambda: kubectl("get", "--raw=/readyz", check=False, timeout="5s").stdout.strip() == "ok", timeout=180)
    before = manifests()
    drifted = {h: drift(h) for h in CPS}
    drifted.update({h: drift(h, "kubeadm_config=/etc/kubernetes/kubeadmcfg.yaml") for h in ETCD_HOSTS})
    version = kubeadm.k8s_version()
    poller = ApiPoller()
    poller.start()
    logs = {}
    try:
        logs[CPS[0]] = kubeadm_on(CPS[0], "upgrade", "apply", version, "--yes", "--patches", kubeadm.PATCHES, IGNORED,
                                  what="kubeadm upgrade apply")
        for host in CPS[1:] + WORKERS:
            logs[host] = kubeadm_on(host, "upgrade", "node", "--patches", kubeadm.PATCHES, IGNORED,
                                    what="kubeadm upgrade node")
            node(host, "systemctl", "restart", "kubelet")  # kubeadm's upgrade guide: the kubelet reads its new file
        for host in ETCD_HOSTS:
            logs[host] = kubeadm_on(host, "init", "phase", "etcd", "local", "--config", kubeadm.ETCD_KUBEADMCFG,
                                    what="the etcd guide's upgrade")
        time.sleep(5)  # a manifest kubeadm had rewritten would be restarting by now
    finally:
        poller.stop()
    return dict(before=before, drift=drifted, poller=poller, logs=logs)


def test_before_the_upgrade_kubeadm_would_revert_nothing(upgraded):
    for host, result in upgraded["drift"].items():
        assert result.get("failed") is not True, (host, result.get("msg"))
        assert result["sources"], host
        assert result["drift"] == [], (host, [d["message"] for d in result["drift"]])


def test_kubeadm_found_every_manifest_equal_and_restarted_nothing(upgraded):
    after = manifests()
    for key, (pod, pid) in upgraded["before"].items():
        assert after[key][0] == pod, key
        assert after[key][1] == pid, "%s was restarted" % (key,)
    log = upgraded["logs"][CPS[0]]
    for component in controlplane.MANIFESTS:
        assert "Current and new manifests of %s are equal, skipping upgrade" % component in log, log[-3000:]


def test_no_read_through_the_endpoint_failed(upgraded, capsys):
    poller = upgraded["poller"]
    with capsys.disabled():
        print("\nkubeadm upgrade: %d reads through the controlPlaneEndpoint answered, %d failed"
              % (poller.ok, len(poller.failed)))
    assert poller.ok > 20
    assert poller.failed == []


def test_events_are_still_stored_in_the_events_etcd(upgraded):
    name = "kubescale-lifecycle-" + uuid.uuid4().hex[:8]
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
             "involvedObject": {"kind": "Namespace", "name": "default", "apiVersion": "v1"},
             "reason": "KubescaleLifecycle", "message": "after kubeadm upgrade", "type": "Normal"}
    kubectl("create", "-f", "-", stdin=json.dumps(event))
    try:
        events = ",".join("https://%s:2383" % lab_ip(h) for h in hosts_of("etcd_events"))
        main = ",".join("https://%s:2379" % lab_ip(h) for h in ETCD_HOSTS)
        key = "/registry/events/default/" + name
        in_events = node(CPS[0], "etcdctl", "--endpoints=" + events, *APISERVER_TLS, "get", "--keys-only", key)
        in_main = node(ETCD_HOSTS[0], "etcdctl", "--endpoints=" + main, *ETCD_TLS, "get", "--keys-only", key)
        assert in_events.stdout.strip() == key and in_main.stdout.strip() == ""
    finally:
        kubectl("delete", "event", "-n", "default", name, check=False)


def test_every_api_server_runs_its_inflight_limits_and_every_scheduler_the_bin_packing_profile(upgraded):
    for host in CPS:
        flags = cmdline(host, "kube-apiserver")
        assert "--max-requests-inflight=800" in flags and "--max-mutating-requests-inflight=400" in flags, host
        assert any(f.startswith("--etcd-servers-overrides=/events#") for f in flags), host
        config = [f.split("=", 1)[1] for f in cmdline(host, "kube-scheduler") if f.startswith("--config=")]
        assert config, host
        profiles = yaml.safe_load(node(host, "cat", config[0]).stdout)["profiles"]
        packing = [p for p in profiles if p["schedulerName"] == "bin-packing"][0]
        fit = [c for c in packing["pluginConfig"] if c["name"] == "NodeResourcesFit"][0]
        assert fit["args"]["scoringStrategy"]["type"] == "MostAllocated", host


def test_every_etcd_member_runs_from_its_ssd_with_its_quota_and_every_key(upgraded):
    eps = ",".join("https://%s:2379" % lab_ip(h) for h in ETCD_HOSTS)
    for host in ETCD_HOSTS:
        flags = cmdline(host, "etcd")
        assert "--data-dir=" + SSD_DIR in flags and "--quota-backend-bytes=" + QUOTA in flags, (host, flags)
        # the etcd process sees the SSD at its data dir; no member was started on a directory kubeadm made anew
        mnt = node(host, "sh", "-c", "nsenter -t $(pgrep -x etcd) -m -r findmnt -n -o SOURCE %s" % SSD_DIR).stdout
        assert mnt.strip() == "/dev/sdb[/etcd]", (host, mnt)
        assert node(host, "test", "-e", "/var/lib/etcd/member", check=False).returncode != 0, host
        keys = node(host, "etcdctl", "--endpoints=https://%s:2379" % lab_ip(host), *ETCD_TLS, "get",
                    "--consistency=s", "--prefix", "--keys-only", "/kubescale-test/").stdout.split()
        assert len(keys) == 300, host
    health = node(ETCD_HOSTS[0], "etcdctl", "--endpoints=" + eps, *ETCD_TLS, "endpoint", "health", check=False)
    assert health.returncode == 0, health.stderr


def test_every_kubelet_pulls_in_parallel_after_kubeadm_rewrote_its_configuration(upgraded):
    for host in CPS + WORKERS:
        config = yaml.safe_load(node(host, "cat", "/var/lib/kubelet/config.yaml").stdout)
        assert config["serializeImagePulls"] is False, host
    record = yaml.safe_load(kubectl("get", "configmap", "-n", "kube-system", "kubelet-config", "-o",
                                    "jsonpath={.data.kubelet}").stdout)
    assert record["serializeImagePulls"] is False


def test_a_site_run_after_the_upgrade_changes_nothing(upgraded):
    """The site's second run in make lab-test (site_twice.sh leaves it here): changed=0 on every node after kubeadm's
    upgrade proves the runs idempotent and the tunings kept by the upgrade at once."""
    proc = subprocess.run(["ansible-playbook", "playbooks/site.yml"], cwd=REPO, env=ENV, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:]
    recap = proc.stdout.split("PLAY RECAP", 1)[1]
    changed = [line for line in recap.splitlines() if " changed=" in line and " changed=0 " not in line]
    assert changed == [], "\n".join(changed) + "\n" + "\n".join(
        line for line in proc.stdout.splitlines() if line.startswith("changed:"))
