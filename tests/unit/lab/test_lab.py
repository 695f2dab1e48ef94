"""The lab's decisions: its Debian mirror from the machine's apt sources (either format), the nodes and their address
ranges, when an existing node must be recreated, the inventory it writes, kwok's Nodes and the control plane fixtures."""

import importlib.util
import os
import subprocess
import types

import pytest
import yaml

from lab import image, inventory
from lab import nodes as lab_nodes
from lab.common import LABEL, LabError


def load_standin():
    """lab/fixtures/kubelet-standin.py, the script the lab's nodes run as their kubelet, as a module (a fresh copy)."""
    path = os.path.join(os.path.dirname(image.__file__), "fixtures", "kubelet-standin.py")
    spec = importlib.util.spec_from_file_location("kubelet_standin", path)
    standin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(standin)
    return standin


def test_deb822_sources_skip_security():
    security = "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\nComponents: main\n"
    main = "Types: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm bookworm-updates\nComponents: main\n"
    assert image.parse_apt_sources("", [security + "\n" + main]) == "http://mirror.example/debian"


def test_one_line_sources():
    text = "# comment\ndeb [arch=amd64] http://m.example/debian bookworm main\n"
    assert image.parse_apt_sources(text, []) == "http://m.example/debian"


def test_disabled_stanza_and_no_mirror():
    text = "Types: deb\nEnabled: no\nURIs: http://m.example/debian\nSuites: bookworm\n"
    with pytest.raises(LabError, match="no Debian bookworm mirror"):
        image.parse_apt_sources("", [text])


def test_node_counts_from_environment(monkeypatch):
    monkeypatch.setenv("LAB_CPU_NODES", "4")
    nodes = lab_nodes.wanted_nodes()
    assert [n["name"] for n in nodes if n["group"] == "kube_node_cpu"] == ["cpu-%d" % i for i in range(1, 5)]
    monkeypatch.setenv("LAB_CPU_NODES", "four")
    with pytest.raises(LabError, match="LAB_CPU_NODES"):
        lab_nodes.wanted_nodes()


def test_a_class_count_never_moves_another_classs_addresses(monkeypatch):
    monkeypatch.setenv("LAB_CPU_NODES", "2")
    before = {n["name"]: n["ip"] for n in lab_nodes.wanted_nodes()}
    for env, count in (("LAB_CPU_NODES", "40"), ("LAB_GPU_NODES", "40"), ("LAB_ETCD_NODES", "5")):
        monkeypatch.setenv(env, count)
        after = {n["name"]: n["ip"] for n in lab_nodes.wanted_nodes()}
        assert {k: after[k] for k in before if k in after} == {k: before[k] for k in before if k in after}
        assert len(set(after.values())) == len(after)  # no two nodes share an address
    assert after["cpu-40"] == lab_nodes.SUBNET_PREFIX + ".169"
    assert after["gpu-40"] == lab_nodes.SUBNET_PREFIX + ".109"


def test_the_class_ranges_are_disjoint_inside_the_subnet():
    taken = set()
    for group, _short, _env, _default, _dockerd, first, size in lab_nodes.CLASSES:
        mine = set(range(first, first + size))
        assert not mine & taken, group
        assert 10 <= first and first + size - 1 <= 254, group
        taken |= mine


def test_a_count_beyond_the_class_range_names_the_variable(monkeypatch):
    monkeypatch.setenv("LAB_GPU_NODES", "61")
    with pytest.raises(LabError, match=r"LAB_GPU_NODES must be at most 60 .*kube_node_gpu"):
        lab_nodes.wanted_nodes()


def test_kwok_nodes_have_the_worker_classes_sizes(monkeypatch):
    from lab import controlplane
    monkeypatch.setenv("LAB_KWOK_NODES", "12")
    counts = controlplane.kwok_counts()
    assert counts == {"kube_node_cpu": 10, "kube_node_gpu": 2}
    nodes = controlplane.kwok_nodes(counts)
    assert [n["metadata"]["name"] for n in nodes][:2] == ["kwok-cpu-0001", "kwok-cpu-0002"]
    gpu = nodes[-1]
    assert gpu["metadata"]["name"] == "kwok-gpu-0002"
    assert gpu["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert gpu["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "Standard_NC24"
    assert gpu["status"]["capacity"] == gpu["status"]["allocatable"] == {
        "cpu": "24", "memory": "224Gi", "pods": "110", "nvidia.com/gpu": "4"}
    assert nodes[0]["status"]["capacity"] == {"cpu": "20", "memory": "140Gi", "pods": "110"}
    # each its own InternalIP, as a VM's NIC gives it (kwok gives a hostNetwork pod its node's)
    addresses = [n["status"]["addresses"][0]["address"] for n in nodes]
    assert addresses[0] == "10.240.0.1" and addresses[-1] == "10.241.0.2" and len(set(addresses)) == 12
    assert gpu["status"]["addresses"][1] == {"type": "Hostname", "address": "kwok-gpu-0002"}
    assert controlplane.kwok_address("kube_node_cpu", 2500) == "10.240.9.196"
    with pytest.raises(LabError, match="65,534"):
        controlplane.kwok_address("kube_node_cpu", 65535)
    assert controlplane.kwok_listing("kwok-cpu-0001 v1.35.0 10.240.0.1\nkwok-cpu-0002 v1.35.0\nkwok-gpu-0001\n\n") == {
        "kwok-cpu-0001": ("v1.35.0", "10.240.0.1"), "kwok-cpu-0002": ("v1.35.0", ""), "kwok-gpu-0001": ("", "")}
    monkeypatch.setenv("LAB_KWOK_NODES", "many")
    with pytest.raises(LabError, match="LAB_KWOK_NODES"):
        controlplane.kwok_counts()


def test_the_kubeadm_configurations_are_v1beta4_of_the_pinned_release():
    import yaml

    from lab import kubeadm
    version = kubeadm.k8s_version()
    assert version.startswith("v1.") and int(version.split(".")[1]) >= 34
    members = [{"name": "etcd-kubeadm-%d" % i, "ip": "10.0.0.%d" % (5 + i)} for i in (1, 2, 3)]
    cluster = kubeadm.cluster_configuration("10.0.0.250:6443", members)
    assert cluster["apiVersion"] == "kubeadm.k8s.io/v1beta4" and cluster["kubernetesVersion"] == version
    assert cluster["controlPlaneEndpoint"] == "10.0.0.250:6443"
    assert cluster["etcd"]["external"]["endpoints"] == ["https://10.0.0.6:2379", "https://10.0.0.7:2379",
                                                        "https://10.0.0.8:2379"]
    # the load balancer takes an API server out before it stops listening (it keeps serving, not ready, this long)
    assert {"name": "shutdown-delay-duration", "value": kubeadm.SHUTDOWN_DELAY} in cluster["apiServer"]["extraArgs"]
    # and then stops in seconds, not at the kubelet's SIGKILL: 429 and Retry-After, 2 s for the open connections
    assert {"name": "shutdown-send-retry-after", "value": "true"} in cluster["apiServer"]["extraArgs"]
    # the upstream etcd guide's per-host configuration: its own name, URLs and the whole initial cluster
    init, host = yaml.safe_load_all(kubeadm.etcd_host_config(members[1], members))
    assert init["kind"] == "InitConfiguration" and init["nodeRegistration"]["name"] == "etcd-kubeadm-2"
    extra = dict((a["name"], a["value"]) for a in host["etcd"]["local"]["extraArgs"])
    assert extra["name"] == "etcd-kubeadm-2" and extra["initial-cluster-state"] == "new"
    assert extra["initial-cluster"].count("https://") == 3 and extra["listen-client-urls"] == "https://10.0.0.7:2379"
    # every Node the stand-in registers is tainted: the scheduler never binds a pod there that nothing would run
    reg = kubeadm.node_registration({"name": "cpu-1", "ip": "10.0.0.9"}, control_plane=False)
    assert reg["taints"] == [kubeadm.STANDIN_TAINT] and "CRI" in reg["ignorePreflightErrors"]
    assert kubeadm.node_registration({"name": "cp-1", "ip": "10.0.0.4"}, True)["taints"][0] == kubeadm.CONTROL_PLANE_TAINT


def test_the_standin_gives_each_pod_its_own_root():
    standin = load_standin()
    manifest = """
spec:
  containers:
  - command: [kube-scheduler, --kubeconfig=/etc/kubernetes/scheduler.conf]
    volumeMounts:
    - {name: kubeconfig, mountPath: /etc/kubernetes/scheduler.conf}
    - {name: data, mountPath: /var/lib/etcd}
  volumes:
  - {name: kubeconfig, hostPath: {path: /etc/kubernetes/scheduler.conf, type: FileOrCreate}}
  - {name: data, hostPath: {path: /mnt/local-ssd/etcd, type: DirectoryOrCreate}}
"""
    argv = standin.argv_for("kube-scheduler.yaml", manifest)
    assert argv[:4] == ["unshare", "--mount", "--propagation", "private"]
    assert argv[argv.index("pod") + 1] == "/run/kubescale-lab/pods/kube-scheduler"
    binds = argv[argv.index("pod") + 2:argv.index("--")]
    assert binds == ["file", "/etc/kubernetes/scheduler.conf", "/etc/kubernetes/scheduler.conf",
                     "dir", "/mnt/local-ssd/etcd", "/var/lib/etcd"]
    assert argv[argv.index("--") + 1:] == ["kube-scheduler", "--kubeconfig=/etc/kubernetes/scheduler.conf"]
    assert "chroot" in standin.POD_ROOT


def labels(group, port, ip, key="k1", disk="/d/cpu-1.img"):
    return {LABEL + ".group": group, LABEL + ".ssh-port": str(port), LABEL + ".ip": ip, LABEL + ".key": key,
            LABEL + ".disk": disk, LABEL + ".k8s-mount": lab_nodes.K8S_CACHE}


def test_a_node_is_kept_unless_its_key_disk_loop_or_address_changed():
    node = {"name": "cpu-1", "ip": "172.30.213.130"}
    have = labels("kube_node_cpu", 22210, "172.30.213.130")
    devices = [{"PathOnHost": "/dev/loop7"}]
    asked = []

    def loop():
        asked.append(1)
        return "/dev/loop7"
    assert lab_nodes.why_stale(have, devices, node, "k1", "/d/cpu-1.img", True, loop) == ""
    assert lab_nodes.why_stale(have, devices, node, "k2", "/d/cpu-1.img", True, loop) == "another checkout's SSH key"
    assert "resource disk" in lab_nodes.why_stale(have, devices, node, "k1", "/d/cpu-1.img", False, loop)
    assert "loop device is gone" in lab_nodes.why_stale(have, None, node, "k1", "/d/cpu-1.img", True, loop)
    moved = lab_nodes.why_stale(have, devices, dict(node, ip="172.30.213.131"), "k1", "/d/cpu-1.img", True, loop)
    assert moved == "its address moved from 172.30.213.130 to 172.30.213.131"
    unmounted = dict(have)
    del unmounted[LABEL + ".k8s-mount"]
    assert "Kubernetes build" in lab_nodes.why_stale(unmounted, devices, node, "k1", "/d/cpu-1.img", True, loop)
    asked.clear()
    lab_nodes.why_stale(have, devices, node, "k1", "/d/cpu-1.img", False, loop)
    assert asked == []  # no loop device attached for a disk that is not there


def test_the_inventory_is_yaml_with_every_class_children_and_kube_node():
    text = inventory.render_inventory({
        "kslab-cpu-2": labels("kube_node_cpu", 22211, "172.30.213.131"),
        "kslab-cpu-1": labels("kube_node_cpu", 22210, "172.30.213.130"),
        "kslab-etcd-kubeadm-1": labels("etcd_kubeadm", 22220, "172.30.213.60"),
    })
    doc = yaml.safe_load(text)["all"]["children"]
    assert list(doc["kube_node_cpu"]["hosts"]) == ["cpu-1", "cpu-2"]
    cpu1 = doc["kube_node_cpu"]["hosts"]["cpu-1"]
    assert cpu1 == {"ansible_port": 22210, "lab_container": "kslab-cpu-1", "lab_ip": "172.30.213.130"}
    assert doc["etcd"] == {"hosts": {}, "children": {"etcd_kubeadm": None}}  # a child group even with no hosts
    assert doc["etcd_kubeadm"]["hosts"]["etcd-kubeadm-1"]["ansible_port"] == 22220
    assert doc["kube_node"] == {"children": {"kube_node_cpu": None, "kube_node_gpu": None}}
    assert set(doc) == {c[0] for c in lab_nodes.CLASSES} - lab_nodes.INFRA_GROUPS | {"kube_node"}


def test_the_ee_base_image_follows_the_node_image_and_this_machines_ca_bundle(monkeypatch, tmp_path):
    ca = tmp_path / "ca.crt"
    ca.write_text("CA one\n")
    monkeypatch.setattr(image, "HOST_FILES", [str(ca), str(tmp_path / "absent.conf")])
    first = image.ee_base_image_tag()
    assert first.startswith(image.EE_BASE_REPO + ":") and first == image.ee_base_image_tag()
    ca.write_text("CA two\n")
    second = image.ee_base_image_tag()
    assert second != first
    monkeypatch.setattr(image, "image_tag", lambda: "kubescale-lab-base:another")
    assert image.ee_base_image_tag() not in (first, second)


def test_a_shown_command_never_writes_to_stdout(capfd):
    """The lab's subcommands print an image's tag for scripts to take from stdout (scripts/molecule.sh): a command run
    uncaptured (debootstrap on a first build) shows its output on stderr (CI's toml_legacy scenario once read
    debootstrap's lines as the image name)."""
    from lab import common

    common.run(["sh", "-c", "echo I: Retrieving Packages; echo warn >&2"], capture=False)
    out, err = capfd.readouterr()
    assert out == "" and "I: Retrieving Packages" in err and "warn" in err


def test_the_standin_keeps_a_running_pod_while_its_manifest_is_half_written(tmp_path, monkeypatch):
    """kubeadm writes a manifest in place (kubeadm init phase etcd local): read empty or half-written it is no change
    (the kubelet's file source keeps its pod when a changed file does not decode); a different pod restarts it."""
    standin = load_standin()
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    manifest = manifests / "etcd.yaml"
    manifest.write_text("spec:\n  containers:\n  - command: [etcd, --data-dir=/mnt/local-ssd/etcd]\n")
    digest = standin.read(str(manifest))[0]
    unit = standin.unit_of("etcd.yaml")
    calls = []
    monkeypatch.setattr(standin, "pod_units", lambda: {unit: ("active", digest)})
    monkeypatch.setattr(standin, "main_pids", lambda units: dict.fromkeys(units, os.getpid()))
    monkeypatch.setattr(standin, "stop_unit", lambda *a: calls.append(("stop",) + a))
    monkeypatch.setattr(standin, "start_unit", lambda *a: calls.append(("start",) + a) or True)
    pods = standin.Pods(str(manifests))
    pods.sync()
    assert calls == [] and "etcd.yaml" in pods.snapshot()
    for partial in ("", "spec:\n  containers:\n  - command: [etc"):
        manifest.write_text(partial)
        pods.sync()
        assert calls == [] and "etcd.yaml" in pods.snapshot()
    manifest.write_text("spec:\n  containers:\n  - command: [etcd, --data-dir=/var/lib/etcd]\n")
    pods.sync()
    assert [c[0] for c in calls] == ["stop", "start"]


def test_the_standin_reads_its_pods_units_in_one_call_and_decodes_a_manifest_once(monkeypatch):
    standin = load_standin()
    listed = ("kubelet-pod-etcd.service  loaded active running kubelet static pod etcd.yaml 0123abcd\n"
              "\u25cf kubelet-pod-kube-scheduler.service loaded failed failed kubelet static pod kube-scheduler.yaml 4567ef\n"
              "kubelet-pod-odd.service loaded inactive dead something else\n")
    asked = []
    monkeypatch.setattr(standin, "systemctl", lambda *a: asked.append(a) or types.SimpleNamespace(stdout=listed))
    assert standin.pod_units() == {"kubelet-pod-etcd.service": ("active", "0123abcd"),
                                   "kubelet-pod-kube-scheduler.service": ("failed", "4567ef"),
                                   "kubelet-pod-odd.service": ("inactive", "")}
    assert len(asked) == 1
    block = b"spec:\n  containers:\n  - command: [etcd]\n"
    flow = b"{spec: {containers: [{command: [etcd]}]}}"
    assert standin.decode(block)[2] == standin.decode(flow)[2]  # the pod's digest, not the text's
    pod = standin.pod_of(block)
    pod["spec"]["containers"].clear()  # a caller's copy: the decoded pod stays as the file says
    assert standin.pod_of(block)["spec"]["containers"] == [{"command": ["etcd"]}]
    assert standin.decode(b"spec: [unclosed")[0] is False
    loads = []
    real = standin.yaml.load
    monkeypatch.setattr(standin.yaml, "load", lambda *a, **k: loads.append(1) or real(*a, **k))
    manifest = b"spec: {containers: [{command: [kube-apiserver]}]}"
    for data in (manifest, manifest, manifest):
        standin.decode(data)
    assert len(loads) == 1


def test_the_standin_asks_systemd_only_when_a_manifest_changed_a_pod_process_went_or_a_resync_is_due(
        tmp_path, monkeypatch):
    """Each second the stand-in reads its manifests and looks for each running pod's main process in /proc; systemd is
    asked for the units' states only when one of those changed, or RESYNC seconds after it last was."""
    standin = load_standin()
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    manifest = manifests / "kube-scheduler.yaml"
    manifest.write_text("spec:\n  containers:\n  - command: [kube-scheduler]\n")
    unit = standin.unit_of("kube-scheduler.yaml")
    clock = [1000.0]
    monkeypatch.setattr(standin.time, "time", lambda: clock[0])
    running = {}  # unit -> digest, what "systemd" runs
    asked = []
    monkeypatch.setattr(standin, "pod_units",
                        lambda: asked.append("units") or {u: ("active", d) for u, d in running.items()})
    pid = [os.getpid()]
    monkeypatch.setattr(standin, "main_pids", lambda units: asked.append("pids") or dict.fromkeys(units, pid[0]))
    monkeypatch.setattr(standin, "start_unit", lambda name, u, digest, data: running.update({u: digest}) or True)
    monkeypatch.setattr(standin, "stop_unit", lambda name, u: running.pop(u, None))
    pods = standin.Pods(str(manifests))
    pods.sync()  # starts the pod: not running yet, so the next second asks again
    assert asked == ["units"] and unit in running
    pods.sync()
    assert asked == ["units", "units", "pids"] and pods.snapshot()["kube-scheduler.yaml"][2] is True
    for _second in range(standin.RESYNC - 1):
        clock[0] += 1
        pods.sync()
    assert asked == ["units", "units", "pids"]  # steady: manifests read, the process found, systemd not asked
    clock[0] += 1
    pods.sync()
    assert asked[3:] == ["units", "pids"]  # RESYNC seconds on
    del asked[:]
    manifest.write_text("spec:\n  containers:\n  - command: [kube-scheduler, --v=2]\n")
    pods.sync()
    assert asked == ["units"] and running[unit] == standin.read(str(manifest))[0]  # a changed manifest: restarted
    pods.sync()
    del asked[:]
    pods.sync()
    assert asked == []
    gone = subprocess.Popen(["true"])
    gone.wait()
    pid[0] = gone.pid  # from the next full sync on, the pod's main process is one that exited
    clock[0] += standin.RESYNC
    pods.sync()
    del asked[:]
    pods.sync()
    assert asked == ["units", "pids"]  # gone: systemd asked at once, not RESYNC seconds on


def test_the_standin_reads_each_units_main_pid_in_one_call(monkeypatch):
    standin = load_standin()
    shown = "MainPID=1523\nId=kubelet-pod-kube-apiserver.service\n\nMainPID=0\nId=kubelet-pod-etcd.service\n"
    asked = []
    monkeypatch.setattr(standin, "systemctl", lambda *a: asked.append(a) or types.SimpleNamespace(stdout=shown))
    assert standin.main_pids(["kubelet-pod-kube-apiserver.service", "kubelet-pod-etcd.service"]) == {
        "kubelet-pod-kube-apiserver.service": 1523, "kubelet-pod-etcd.service": 0}
    assert len(asked) == 1 and asked[0][0] == "show"
    assert standin.main_pids([]) == {}


class FakeConnection:
    """http.client.HTTPSConnection's part the stand-in uses; `drop` makes the next request fail as on a connection
    the server closed."""
    opened = []

    def __init__(self, host, port, context=None, timeout=None):
        self.requests, self.drop, self.closed = [], False, False
        FakeConnection.opened.append(self)

    def request(self, method, path, body=None, headers=None):
        if self.drop:
            raise ConnectionResetError("closed by the server")
        self.requests.append((method, path))

    def getresponse(self):
        return types.SimpleNamespace(status=200, will_close=False, read=lambda: b'{"kind": "PodList"}')

    def close(self):
        self.closed = True


def test_the_standins_api_client_keeps_its_connection_and_opens_it_again_once(monkeypatch):
    standin = load_standin()
    monkeypatch.setattr(standin.http.client, "HTTPSConnection", FakeConnection)
    FakeConnection.opened = []
    api = object.__new__(standin.Api)
    api.host, api.port, api.prefix, api.ctx, api.token, api.conn = "10.0.0.1", 6443, "", None, None, None
    assert api.call("GET", "/api/v1/pods") == (200, {"kind": "PodList"})
    assert api.call("GET", "/api/v1/pods") == (200, {"kind": "PodList"})
    assert len(FakeConnection.opened) == 1 and len(FakeConnection.opened[0].requests) == 2
    FakeConnection.opened[0].drop = True  # an API server restarted behind the endpoint
    assert api.call("GET", "/api/v1/pods") == (200, {"kind": "PodList"})
    assert len(FakeConnection.opened) == 2 and FakeConnection.opened[0].closed

    def refused(*_args, **_kwargs):
        raise ConnectionRefusedError()
    monkeypatch.setattr(FakeConnection, "request", refused)
    api.close()
    with pytest.raises(ConnectionRefusedError):  # a new connection that fails is not tried again
        api.call("GET", "/api/v1/pods")
    assert len(FakeConnection.opened) == 3


def test_a_body_cut_short_is_an_oserror_the_agents_loop_retries(monkeypatch):
    """http.client's own exceptions (here IncompleteRead) close the connection and reach the agent's loop as OSError;
    a response that is not JSON is an error's {} only."""
    standin = load_standin()
    monkeypatch.setattr(standin.http.client, "HTTPSConnection", FakeConnection)
    FakeConnection.opened = []
    api = object.__new__(standin.Api)
    api.host, api.port, api.prefix, api.ctx, api.token, api.conn = "10.0.0.1", 6443, "", None, None, None

    def cut_short():
        raise standin.http.client.IncompleteRead(b'{"kind"', 10)
    monkeypatch.setattr(FakeConnection, "getresponse", lambda self: types.SimpleNamespace(
        status=200, will_close=False, read=cut_short))
    with pytest.raises(OSError, match="GET /api/v1/pods: IncompleteRead"):
        api.call("GET", "/api/v1/pods")
    assert api.conn is None and FakeConnection.opened[0].closed
    monkeypatch.setattr(FakeConnection, "getresponse", lambda self: types.SimpleNamespace(
        status=503, will_close=True, read=lambda: b"unavailable"))
    assert api.call("GET", "/api/v1/pods") == (503, {}) and api.conn is None
    monkeypatch.setattr(FakeConnection, "getresponse", lambda self: types.SimpleNamespace(
        status=200, will_close=False, read=lambda: b"not json"))
    with pytest.raises(ValueError):
        api.call("GET", "/api/v1/pods")


def test_the_standin_renews_its_lease_from_the_copy_it_got_back(monkeypatch):
    """As the kubelet: an update of the Lease the last renewal returned; a read only first and after a refusal."""
    standin = load_standin()
    calls = []
    answers = []

    class FakeApi:
        def call(self, method, path, body=None, content_type=None):
            calls.append(method)
            return answers.pop(0)
    agent = standin.NodeAgent("cp-1", {}, None, "v1.36.3")
    agent.api, agent.uid = FakeApi(), "uid-1"
    lease = {"metadata": {"name": "cp-1", "resourceVersion": "1"}, "spec": {}}
    answers[:] = [(200, lease), (200, dict(lease, metadata={"resourceVersion": "2"}))]
    agent.renew_lease()
    assert calls == ["GET", "PUT"] and agent.lease["metadata"]["resourceVersion"] == "2"
    answers[:] = [(200, dict(lease, metadata={"resourceVersion": "3"}))]
    agent.renew_lease()
    assert calls[2:] == ["PUT"] and agent.lease["spec"]["holderIdentity"] == "cp-1"
    answers[:] = [(409, {}), (200, lease), (200, lease)]  # changed behind it: read again, then update
    agent.renew_lease()
    assert calls[3:] == ["PUT", "GET", "PUT"] and agent.lease is not None
    answers[:] = [(404, {}), (404, {}), (201, lease)]  # deleted: made again
    agent.renew_lease()
    assert calls[6:] == ["PUT", "GET", "POST"] and agent.lease == lease


def test_the_etcd_classes_disks_are_in_memory_and_the_others_on_the_machines_disk():
    from lab import disks
    for name in ("etcd-1", "etcd-events-3", "etcd-kubeadm-2"):
        assert disks.memory_backed(name) and disks.disk_path(name).startswith(disks.MEMORY_DIR + os.sep)
    assert disks.MEMORY_DIR.startswith("/dev/shm/")
    for name in ("cp-1", "cpu-12", "gpu-1", "lb-1"):
        assert not disks.memory_backed(name)
        assert disks.disk_path(name) == os.path.join(disks.STATE, "disks", name + ".img")


def test_an_etcd_node_made_without_the_emulated_network_disk_is_made_again():
    node = {"name": "etcd-kubeadm-1", "ip": "172.30.213.60", "group": "etcd_kubeadm"}
    have = labels("etcd_kubeadm", 22210, "172.30.213.60", disk="/d/e.img")
    devices = [{"PathOnHost": "/dev/loop7"}, {"PathOnHost": "/dev/fuse"}]
    assert "emulated network disk" in lab_nodes.why_stale(have, devices, node, "k1", "/d/e.img", True,
                                                          lambda: "/dev/loop7")
    have[LABEL + ".netdisk"] = "1"
    assert lab_nodes.why_stale(have, devices, node, "k1", "/d/e.img", True, lambda: "/dev/loop7") == ""
    worker = {"name": "cpu-1", "ip": "172.30.213.130", "group": "kube_node_cpu"}
    assert lab_nodes.why_stale(labels("kube_node_cpu", 22211, "172.30.213.130", disk="/d/c.img"), devices[:1], worker,
                               "k1", "/d/c.img", True, lambda: "/dev/loop7") == ""
