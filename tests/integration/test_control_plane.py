"""Against the lab's real control plane (lab/kubeadm.py, lab/controlplane.py): kube-apiserver, kube-controller-manager
and kube-scheduler built from Go modules and run by kubeadm as static pods on the control plane nodes, their objects in
the external etcd hosts' cluster, Events wired by events_etcd into the Events cluster, kwok keeping LAB_KWOK_NODES fake
Nodes Ready; and the fleet audit of the Events cluster and the control plane with one Events member stopped. Runs
after `make site`, after test_etcd_static_pod.py and test_events_etcd.py (which disturb the same clusters); in order.
"""

import json
import os
import subprocess
import time

import pytest
import yaml
from audit_lab import audit, failed_with_report, lab_hosts, only_red_on
from kube import wait_for
from labnode import HOSTS, REPO, hosts_of, lab_ip
from test_etcd import node, playbook, recap
from test_tags import run_json

from lab import controlplane

MAIN = ["etcd-kubeadm-1", "etcd-kubeadm-2", "etcd-kubeadm-3"]
MANIFEST = "/etc/kubernetes/manifests/kube-apiserver.yaml"
ETCD_ROLE = "tests/integration/etcd_role.yml"
EVENTS_ROLE = "tests/integration/events_role.yml"
KUBEADM_TLS = ["--cacert=/etc/kubernetes/pki/etcd/ca.crt", "--cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt",
               "--key=/etc/kubernetes/pki/etcd/healthcheck-client.key"]
APISERVER_TLS = ["--cacert=/etc/kubernetes/pki/etcd/ca.crt", "--cert=/etc/kubernetes/pki/apiserver-etcd-client.crt",
                 "--key=/etc/kubernetes/pki/apiserver-etcd-client.key"]
NS = "kubescale-test"

pytestmark = [pytest.mark.usefixtures("lab"),
              pytest.mark.usefixtures("control_plane_and_events_lock")]


@pytest.fixture(scope="module")
def bins():
    return os.path.join(controlplane.build_binaries(), "bin")


@pytest.fixture(scope="module")
def kubectl(bins):
    def call(*args, stdin=None, check=True, timeout="20s"):
        proc = subprocess.run([os.path.join(bins, "kubectl"), "--kubeconfig", controlplane.ADMIN_CONF,
                               "--request-timeout=" + timeout] + list(args),
                              capture_output=True, text=True, input=stdin, check=False)
        if check and proc.returncode != 0:
            raise AssertionError("kubectl %s: %s" % (" ".join(args), proc.stderr.strip()))
        return proc
    return call


def main_etcd(*args, check=True):
    eps = ",".join("https://%s:2379" % lab_ip(m) for m in MAIN)
    return node(MAIN[0], "etcdctl", "--endpoints=" + eps, *KUBEADM_TLS, "--command-timeout=10s", *args, check=check)


def events_etcd(*args, check=True):
    eps = ",".join("https://%s:2383" % lab_ip(m) for m in hosts_of("etcd_events"))
    return node("cp-1", "etcdctl", "--endpoints=" + eps, *APISERVER_TLS, "--command-timeout=10s", *args, check=check)


def keys(etcd, prefix):
    return [k for k in etcd("get", "--prefix", "--keys-only", prefix).stdout.splitlines() if k]


def apiserver_pid():
    return node("cp-1", "pgrep", "-x", "kube-apiserver", check=False).stdout.strip()


def ready(kubectl):
    proc = kubectl("get", "--raw=/readyz", check=False, timeout="5s")
    return proc.returncode == 0 and proc.stdout.strip() == "ok"


@pytest.fixture(scope="module")
def api(kubectl):
    """The API server answering ready, and the test namespace (made again from scratch)."""
    wait_for("kube-apiserver /readyz", lambda: ready(kubectl), timeout=180)
    kubectl("delete", "namespace", NS, "--ignore-not-found", "--wait=true", timeout="120s")
    kubectl("create", "namespace", NS)
    yield kubectl
    kubectl("delete", "namespace", NS, "--ignore-not-found", "--wait=false", check=False)


def event(name, message):
    return json.dumps({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": NS},
                       "involvedObject": {"kind": "ConfigMap", "namespace": NS, "name": "kube-root-ca.crt", "apiVersion": "v1"},
                       "reason": "KubescaleTest", "message": message, "type": "Normal"})


def test_version_leases_and_kwok_nodes(api, bins):
    version = subprocess.run([os.path.join(bins, "kube-apiserver"), "--version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    assert version == "Kubernetes " + controlplane.k8s_version()
    server = json.loads(api("version", "-o", "json").stdout)["serverVersion"]
    assert server["gitVersion"] == controlplane.k8s_version()
    for component in ("kube-scheduler", "kube-controller-manager"):
        def held(component=component):
            lease = json.loads(api("get", "lease", "-n", "kube-system", component, "-o", "json", check=False).stdout
                               or "{}")
            holder = lease.get("spec", {}).get("holderIdentity", "")
            return any(holder.startswith(cp + "_") for cp in hosts_of("kube_control_plane")) and lease
        lease = wait_for(component + "'s lease", held, timeout=120)
        assert lease["spec"]["leaseDurationSeconds"] > 0
    counts = controlplane.kwok_counts()
    nodes = json.loads(api("get", "nodes", "-l", "type=kwok", "-o", "json").stdout)["items"]
    assert len(nodes) == sum(counts.values())
    for n in nodes:
        ready_cond = [c for c in n["status"]["conditions"] if c["type"] == "Ready"]
        assert ready_cond and ready_cond[0]["status"] == "True", n["metadata"]["name"]
        group = n["metadata"]["labels"]["kubescale.io/node-class"]
        assert n["status"]["allocatable"] == controlplane.NODE_SIZES[group][2]
    gpu = [n for n in nodes if n["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "Standard_NC24"]
    assert len(gpu) == counts["kube_node_gpu"] and gpu[0]["status"]["capacity"]["nvidia.com/gpu"] == "4"


def test_a_deployment_of_100_pods_is_scheduled_onto_kwok_nodes(api):
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "batch", "namespace": NS},
        "spec": {"replicas": 100, "selector": {"matchLabels": {"app": "batch"}},
                 "template": {"metadata": {"labels": {"app": "batch"}},
                              "spec": {"containers": [{"name": "work", "image": "registry.k8s.io/pause:3.10",
                                                       "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}}},
    }
    api("apply", "-f", "-", stdin=json.dumps(deployment))

    def all_running():
        pods = json.loads(api("get", "pods", "-n", NS, "-l", "app=batch", "-o", "json").stdout)["items"]
        running = [p for p in pods if p["status"].get("phase") == "Running" and p["spec"].get("nodeName")]
        return len(running) == 100 and pods
    pods = wait_for("100 Running pods", all_running, timeout=240, interval=2)
    assert all(p["spec"]["nodeName"].startswith("kwok-") for p in pods)
    assert len({p["spec"]["nodeName"] for p in pods}) > 1


def test_events_live_in_the_events_etcd_and_nothing_else_does(api):
    for i in range(3):
        api("create", "-f", "-", stdin=event("written-%d" % i, "through the API server"))
    # the scheduler's and kubelet-stand-in's Events for the Deployment's pods, and ours
    events = wait_for("the Deployment's Scheduled events", lambda: [
        k for k in keys(events_etcd, "/registry/events/%s/" % NS) if "batch-" in k], timeout=60)
    assert len(events) >= 100
    ours = keys(events_etcd, "/registry/events/%s/written-" % NS)
    assert len(ours) == 3
    # none in the main etcd (Events from before events_etcd wired the override, at the lab's start, stay there until
    # their TTL: this namespace was made after)
    assert keys(main_etcd, "/registry/events/%s/" % NS) == []
    # what is not an Event stays in the main etcd
    assert len(keys(main_etcd, "/registry/pods/%s/" % NS)) == 100
    assert keys(main_etcd, "/registry/leases/kube-system/kube-scheduler")
    assert keys(events_etcd, "/registry/pods/") == [] and keys(events_etcd, "/registry/leases/") == []


def test_events_cluster_down_pods_and_leases_still_written_events_refused(api):
    members = hosts_of("etcd_events")
    for m in members:
        node(m, "systemctl", "stop", "etcd-events")
    try:
        cm = api("create", "configmap", "while-events-down", "-n", NS, "--from-literal=a=b", check=False)
        assert cm.returncode == 0, cm.stderr
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": "while-events-down", "namespace": NS},
                 "spec": {"holderIdentity": "kubescale-test", "leaseDurationSeconds": 30}}
        assert api("apply", "-f", "-", stdin=json.dumps(lease), check=False).returncode == 0
        api("scale", "deployment", "batch", "-n", NS, "--replicas=101")
        wait_for("pod 101 Running", lambda: len([
            p for p in json.loads(api("get", "pods", "-n", NS, "-l", "app=batch", "-o", "json").stdout)["items"]
            if p["status"].get("phase") == "Running"]) == 101, timeout=120, interval=2)
        refused = api("create", "-f", "-", stdin=event("while-events-down", "refused"), check=False, timeout="15s")
        assert refused.returncode != 0
    finally:
        for m in members:
            node(m, "systemctl", "start", "--no-block", "etcd-events")
    wait_for("the Events cluster", lambda: events_etcd("endpoint", "health", check=False).returncode == 0, timeout=120)
    wait_for("Event writes", lambda: api("create", "-f", "-", stdin=event("after-events-back", "written"),
                                         check=False).returncode == 0, timeout=60)
    assert keys(main_etcd, "/registry/configmaps/%s/while-events-down" % NS)
    assert keys(main_etcd, "/registry/leases/%s/while-events-down" % NS)
    assert keys(main_etcd, "/registry/events/%s/" % NS) == []


def test_a_broken_override_is_refused_and_the_apiserver_keeps_running(api):
    before = node("cp-1", "cat", MANIFEST).stdout
    pid = apiserver_pid()
    assert pid
    # a member that does not answer
    node(hosts_of("etcd_events")[0], "systemctl", "stop", "etcd-events")
    try:
        proc = playbook(EVENTS_ROLE, "-l", "cp-1")
        assert proc.returncode != 0 and "does not answer healthy" in proc.stdout, proc.stdout[-3000:]
    finally:
        node(hosts_of("etcd_events")[0], "systemctl", "start", "etcd-events")
    # the members' plain-HTTP metrics port (the override would name https:// where no TLS answers), a port nothing
    # listens on, one the main etcd owns, a resource that is not one
    for extra, message in ((["events_etcd_client_port=2385", "events_etcd_metrics_port=2386"], "does not answer healthy"),
                           (["events_etcd_client_port=2390"], "does not answer healthy"),
                           (["events_etcd_client_port=2379"], "clash with the main etcd"),
                           (["events_etcd_apiserver_resource=events"], "events_etcd_apiserver_resource")):
        proc = playbook(EVENTS_ROLE, "-l", "cp-1", *[a for e in extra for a in ("-e", e)])
        assert proc.returncode != 0 and message in proc.stdout, proc.stdout[-3000:]
    assert node("cp-1", "cat", MANIFEST).stdout == before
    assert apiserver_pid() == pid
    assert ready(api)


def fill(api, prefix, limit=60):
    """Write 1 MiB ConfigMaps through the API server until etcd refuses; their names."""
    written = []
    blob = "x" * (1024 * 1024 - 4096)
    for i in range(limit):
        name = "%s-%d" % (prefix, i)
        proc = api("create", "-f", "-", check=False, stdin=json.dumps({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}, "data": {"blob": blob}}))
        if proc.returncode != 0:
            return written, proc.stderr
        written.append(name)
    return written, ""


def test_the_main_etcds_quota_is_what_etcd_enforces_and_raising_it_lets_writes_go_on(api):
    """One member with a small quota is enough: the NOSPACE alarm it raises stops writes cluster-wide."""
    status = json.loads(main_etcd("endpoint", "status", "-w", "json").stdout)
    db = max(s["Status"]["dbSize"] for s in status)
    small = db + 12 * 1024 * 1024
    member = MAIN[0]
    written = []
    try:
        proc = playbook(ETCD_ROLE, "-l", member, "-e", "etcd_local_disk_quota_backend_bytes=%d" % small)
        assert proc.returncode == 0, proc.stdout[-3000:]
        written, error = fill(api, "fill")
        assert written and "database space exceeded" in error, error
        assert "NOSPACE" in main_etcd("alarm", "list").stdout
        # the role's report shows the alarm, and it leaves it while the database is (nearly) at the quota
        proc = playbook(ETCD_ROLE, "-l", member, "-e", "etcd_local_disk_quota_backend_bytes=%d" % small)
        assert proc.returncode == 0 and "alarms: NOSPACE" in " ".join(proc.stdout.split()), proc.stdout[-3000:]
        assert recap(proc, member)["changed"] == 0
        assert "NOSPACE" in main_etcd("alarm", "list").stdout
    finally:
        # back to the site's quota (8 GiB), quorum kept; the role disarms NOSPACE once the quota is above the database
        proc = playbook(ETCD_ROLE, "-l", member)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "alarms: none" in " ".join(proc.stdout.split())
    assert main_etcd("alarm", "list").stdout.strip() == ""
    more, error = fill(api, "after", limit=3)
    assert len(more) == 3, error
    names = {c["metadata"]["name"] for c in json.loads(api("get", "configmaps", "-n", NS, "-o", "json").stdout)["items"]}
    assert set(written) | set(more) <= names
    assert len(keys(main_etcd, "/kubescale-test/")) == 300
    api("delete", "configmap", "-n", NS, *(written + more))


def kubelet_check(bins, path, cgroup2=True):
    """The kubelet's own start-up validation of `path` (lab/k8s/cmd/kubelet-config-check). Part of it reads the host:
    with `cgroup2`, it runs in a mount namespace whose /sys/fs/cgroup is the unified hierarchy, as on the cgroup v2
    nodes Azure runs (Ubuntu 22.04 and later)."""
    argv = [os.path.join(bins, "kubelet-config-check"), str(path)]
    if cgroup2:
        argv = ["unshare", "--mount", "sh", "-c", 'mount -t cgroup2 none /sys/fs/cgroup && exec "$0" "$@"'] + argv
    return subprocess.run(argv, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("host,limit", [("cpu-1", None), ("gpu-1", 4)])
def test_the_kubelets_own_validation_accepts_what_kubelet_pulls_wrote(bins, tmp_path, host, limit):
    """The CPU class pulls without a limit (the kubelet's default: none), the GPU class at most 4 at once
    (inventories/lab/group_vars/kube_node_gpu.yml): the kubelet reads each as written."""
    config = node(host, "cat", "/var/lib/kubelet/config.yaml").stdout
    path = tmp_path / "config.yaml"
    path.write_text(config)
    proc = kubelet_check(bins, path)
    assert proc.returncode == 0, proc.stderr
    got, wrote = json.loads(proc.stdout), yaml.safe_load(config)
    assert got["serializeImagePulls"] is False and wrote["serializeImagePulls"] is False
    assert wrote.get("maxParallelImagePulls") == limit
    assert got.get("maxParallelImagePulls") == limit
    if host != "cpu-1":
        return
    # the combination the kubelet refuses (and so does kubelet_pulls, before writing)
    bad = dict(wrote, serializeImagePulls=True, maxParallelImagePulls=5)
    path.write_text(yaml.safe_dump(bad))
    proc = kubelet_check(bins, path)
    assert proc.returncode == 1
    assert "maxParallelImagePulls cannot be larger than 1 unless SerializeImagePulls" in proc.stderr
    role = subprocess.run(["ansible", "cpu-1", "-i", HOSTS, "-b", "-m", "ansible.builtin.include_role",
                           "-a", "name=kubescale.tuning.kubelet_pulls", "-e", "kubelet_pulls_serialize_image_pulls=true",
                           "-e", "kubelet_pulls_max_parallel_image_pulls=5"], cwd=REPO, capture_output=True,
                          text=True, check=False, env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg")))
    assert role.returncode != 0 and "kubelet_pulls_max_parallel_image_pulls" in role.stdout, role.stdout[-2000:]
    assert node("cpu-1", "cat", "/var/lib/kubelet/config.yaml").stdout == config


def test_the_kubelet_refuses_a_cgroup_v1_host_unless_told(bins, tmp_path):
    """Kubernetes 1.35 and later: failCgroupV1 defaults to true, so this config would stop a kubelet on a cgroup v1
    host (this lab machine is one when /sys/fs/cgroup is not cgroup2)."""
    path = tmp_path / "config.yaml"
    path.write_text(node("cpu-1", "cat", "/var/lib/kubelet/config.yaml").stdout)
    host_v1 = subprocess.run(["stat", "-f", "-c", "%T", "/sys/fs/cgroup"], capture_output=True, text=True,
                             check=True).stdout.strip() != "cgroup2fs"
    proc = kubelet_check(bins, path, cgroup2=False)
    if host_v1:
        assert proc.returncode == 1 and "not run on a host using cgroup v1" in proc.stderr, proc.stderr
        path.write_text(path.read_text() + "failCgroupV1: false\n")
        proc = kubelet_check(bins, path, cgroup2=False)
    assert proc.returncode == 0, proc.stderr


def test_a_bad_variable_of_any_control_plane_role_fails_the_node_before_any_role_runs(api):
    # As the workers' (test_tags.py): scheduler_binpack's and apiserver_load's (the last role) specs refuse these. The
    # one validation task names both, and it is the only task that ran: not arp_sysctl on the node, and not the API
    # objects dns_spread and apiserver_load apply from the controller. Last in this file: the tests before it put back
    # what they changed.
    files = ["/etc/sysctl.d/90-kubescale-arp.conf", "/etc/docker/daemon.json", "/etc/kubernetes/manifests",
             "/etc/kubernetes/kubeadm-config.yaml", "/etc/ansible/facts.d"]
    listing = "sha256sum /etc/sysctl.d/90-kubescale-arp.conf /etc/docker/daemon.json /etc/kubernetes/manifests/* " \
              "/etc/kubernetes/kubeadm-config.yaml; ls -l --time-style=full-iso %s" % " ".join(files)
    objects = ["deployment/coredns", "prioritylevelconfiguration/kubescale-node-agents",
               "flowschema/kubescale-node-agents"]

    def versions():
        return api("get", "-n", "kube-system", *objects, "-o",
                   "jsonpath={range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion} {end}").stdout

    before, api_before = node("cp-1", "sh", "-c", listing).stdout, versions()
    assert api_before.count("=") == 3, api_before
    report = {}
    ran = run_json("playbooks/control_plane.yml", "-l", "cp-1", "-e", "scheduler_binpack_strategy=LeastAllocated",
                   "-e", "apiserver_load_queues=many", rc=2, report=report)
    assert [name for name, _h, _c in ran] == ["Check every role's variables against its argument spec"]
    failed = report["results"][0][2]
    assert failed["failed"] and sorted(failed["argument_errors"]) == ["apiserver_load", "scheduler_binpack"]
    assert ("scheduler_binpack: value of scheduler_binpack_strategy must be one of: MostAllocated, "
            "RequestedToCapacityRatio, got: LeastAllocated") in failed["msg"]
    assert "apiserver_load: argument 'apiserver_load_queues' is of type" in failed["msg"]
    assert node("cp-1", "sh", "-c", listing).stdout == before
    assert versions() == api_before


def test_the_fleet_audit_finds_an_events_member_stopped_on_that_member_only(tmp_path):
    """Red on the member, with a message saying what; amber on its peers and the API servers, which see a degraded
    cluster that keeps its quorum; the run fails after writing the report. The audit reads the Events cluster and the
    control plane only (the workers are another stream's); the member is started again."""
    node("etcd-events-2", "systemctl", "stop", "etcd-events.service")
    try:
        proc, doc, _dir = audit(tmp_path, "etcd_events:kube_control_plane")
    finally:
        node("etcd-events-2", "systemctl", "start", "etcd-events.service")
        for _attempt in range(30):
            if node("etcd-events-2", "systemctl", "is-active", "etcd-events.service", check=False).returncode == 0:
                break
            time.sleep(1)
    failed_with_report(proc)
    checks = only_red_on(doc, "etcd-events-2")
    assert ("etcd_events", "member") in [(c["area"], c["check"]) for c in checks]
    member = [c for c in checks if c["check"] == "member"][0]
    assert member["message"] == "member etcd-events-2 does not answer healthy"
    for peer in ("etcd-events-1", "etcd-events-3", "cp-1"):
        assert doc["nodes"][peer]["status"] == "amber", doc["nodes"][peer]
    assert sorted(doc["nodes"]) == lab_hosts(("etcd_events", "kube_control_plane"))
