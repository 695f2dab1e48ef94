"""Against the lab: the Events etcd cluster (the etcd_events group: three members by default; LAB_ETCD_EVENTS_NODES=1
makes it one) speaks TLS with client certificates only, kube-apiserver's own etcd client certificate on cp-1
is trusted, kube-apiserver's manifest (kubeadm's) gets exactly the override, and so do kubeadm's configuration file and
its record (the kubeadm-config ConfigMap), in the order kubeadm renders them; nothing is wired (or changed) when the
cluster is down or the input is bad. Runs after `make site` converged the lab."""

import hashlib
import json
import os
import re
import subprocess
import time

import pytest
import yaml
from kube import kubectl, wait_for
from labnode import node

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")
ENV = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"))
MANIFEST = "/etc/kubernetes/manifests/kube-apiserver.yaml"
KUBEADM_CONFIG = "/etc/kubernetes/kubeadm-config.yaml"
PKI = "/etc/kubernetes/pki"

pytestmark = [pytest.mark.usefixtures("lab"),
              pytest.mark.usefixtures("control_plane_lock")]


def lab_ip(host):
    with open(HOSTS) as f:
        inv = yaml.safe_load(f)
    for group in inv["all"]["children"].values():
        if host in ((group or {}).get("hosts") or {}):
            return group["hosts"][host]["lab_ip"]
    raise KeyError(host)


def events_members():
    with open(HOSTS) as f:
        return sorted((yaml.safe_load(f)["all"]["children"]["etcd_events"] or {}).get("hosts") or {})


def events_urls():
    return ["https://%s:2383" % lab_ip(m) for m in events_members()]


def events_url():
    """The Events servers as kube-apiserver's override lists them (';'-separated)."""
    return ";".join(events_urls())


def apiserver_etcdctl(*args, url=None, tls=True):
    argv = ["etcdctl", "--endpoints=" + (url or ",".join(events_urls())), "--command-timeout=5s", "--dial-timeout=3s"]
    if tls:
        argv += ["--cacert=%s/etcd/ca.crt" % PKI, "--cert=%s/apiserver-etcd-client.crt" % PKI,
                 "--key=%s/apiserver-etcd-client.key" % PKI]
    return node("cp-1", *(argv + list(args)), check=False)


def playbook(*args):
    return subprocess.run(["ansible-playbook"] + list(args), cwd=REPO, env=ENV, capture_output=True, text=True,
                          check=False)


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


DATA = "/mnt/local-ssd/etcd-events"


def redeploy(host):
    subprocess.run(["/usr/bin/python3", "-m", "lab", "redeploy", host, "--disk", "blank"], cwd=REPO,
                   check=True, capture_output=True)


def stays_down_refused(host):
    """After a wipe the member's guard refused it at boot - etcd never ran on the empty disk under its old ID - and
    its unit is not restarted: it stays down until a run re-adds it."""
    def refused():
        show = node(host, "systemctl", "show", "-p", "ActiveState", "-p", "ExecMainStatus", "-p", "NRestarts",
                    "etcd-events", check=False).stdout.split()
        return show if "ActiveState=failed" in show else None
    show = wait_for("%s's etcd-events to be refused by its guard" % host, refused, timeout=180)
    assert "ExecMainStatus=78" in show and "NRestarts=0" in show, show
    journal = node(host, "journalctl", "-b", "-u", "etcd-events", "--no-pager", check=False).stdout
    assert "etcd-guard: refusing to start: %s holds no data" % DATA in journal, journal[-2000:]
    assert node(host, "test", "-e", DATA + "/member", check=False).returncode != 0
    time.sleep(6)  # longer than the unit's RestartSec: still down, not restarted
    assert node(host, "systemctl", "is-active", "etcd-events", check=False).stdout.strip() == "failed"


def test_a_wiped_events_member_starts_over_and_serves_again():
    # A member whose SSD a redeploy wiped: at boot its unit finds an empty disk and its guard refuses it. A lone
    # member starts over (Events are short-lived: the API server writes them again); one of several is re-added
    # through its peers and resyncs.
    members = events_members()
    wiped = members[-1]
    assert apiserver_etcdctl("put", "/registry/events/default/before-wipe", "kept").returncode == 0
    redeploy(wiped)
    stays_down_refused(wiped)
    proc = playbook("playbooks/etcd_events.yml", "-l", wiped)
    assert proc.returncode == 0, proc.stdout[-3000:]
    readd = proc.stdout.split("Re-add the member through a healthy peer")[1].split("TASK [")[0]
    if len(members) > 1:
        assert re.search(r"changed: \[%s\]" % re.escape(wiped), readd), readd
        own = apiserver_etcdctl("get", "/registry/events/default/before-wipe", "--print-value-only",
                                "--consistency=s", url="https://%s:2383" % lab_ip(wiped))
        assert own.stdout.strip() == "kept", own.stderr  # resynced from the others, read from its own endpoint
    assert apiserver_etcdctl("put", "/registry/events/default/after-wipe", "yes").returncode == 0
    assert apiserver_etcdctl("get", "/registry/events/default/after-wipe", "--print-value-only").stdout.strip() == "yes"
    listed = apiserver_etcdctl("member", "list").stdout
    assert listed.count(", started, ") == len(members), listed
    again = playbook("playbooks/etcd_events.yml", "-l", wiped)
    assert again.returncode == 0 and re.search(r"%s\s+: ok=\d+\s+changed=0 " % re.escape(wiped), again.stdout), \
        again.stdout[-3000:]
    wired = playbook("tests/integration/events_role.yml", "-l", "cp-1")
    assert wired.returncode == 0 and re.search(r"cp-1\s+: ok=\d+\s+changed=0 ", wired.stdout), wired.stdout[-3000:]
    # the admission served once: the unit removed it when etcd was ready
    assert node(wiped, "test", "-e", DATA + ".admitted", check=False).returncode != 0


def test_a_member_wiped_again_between_its_re_add_and_its_start_stays_down_until_a_run_adds_it_again():
    # A run that died after re-adding a wiped member and admitting it, before the member started: the admission is on
    # the SSD, so another wipe takes it along, and the member stays down under both IDs - the old one whose log is
    # gone and the new, never-started one - until a run removes the stale entry and adds it again.
    members = events_members()
    assert len(members) >= 3, members
    wiped = members[0]
    peers = [u for m, u in zip(members, events_urls()) if m != wiped]
    assert apiserver_etcdctl("put", "/registry/events/default/before-second-wipe", "kept").returncode == 0
    redeploy(wiped)
    stays_down_refused(wiped)
    pki = "/etc/kubescale/etcd-events/pki"
    args = ("state=rejoined name=%s peer_urls=https://%s:2384 endpoints=%s cacert=%s/ca.crt cert=%s/member.crt "
            "key=%s/member.key" % (wiped, lab_ip(wiped), ",".join(peers), pki, pki, pki))
    readd = subprocess.run(["ansible", wiped, "-i", HOSTS, "-b", "-m", "kubescale.tuning.etcd_cluster", "-a", args],
                           cwd=REPO, env=ENV, capture_output=True, text=True, check=False)
    assert readd.returncode == 0 and "readded: true" in readd.stdout, readd.stdout[-3000:]
    node(wiped, "sh", "-c", "echo existing > %s.admitted" % DATA)  # as the role's next step writes it
    redeploy(wiped)
    stays_down_refused(wiped)
    listed = apiserver_etcdctl("member", "list", "-w", "json", url=",".join(peers)).stdout
    assert len(json.loads(listed)["members"]) == len(members)  # the nameless, never-started entry
    proc = playbook("playbooks/etcd_events.yml", "-l", wiped)
    assert proc.returncode == 0, proc.stdout[-3000:]
    own = apiserver_etcdctl("get", "/registry/events/default/before-second-wipe", "--print-value-only",
                            "--consistency=s", url="https://%s:2383" % lab_ip(wiped))
    assert own.stdout.strip() == "kept", own.stderr
    listed = apiserver_etcdctl("member", "list").stdout
    assert listed.count(", started, ") == len(members), listed


def test_a_member_changed_behind_the_runs_back_is_caught():
    # An idempotent run skips the enable-and-start step and the fact when etcd_start_info reads them as they should
    # be: a unit disabled or stopped by hand, or a fact edited by hand, is still found and put back (the disabled unit
    # and the fact predicted by --check first), and the run after changes nothing.
    members = events_members()
    disabled, stopped, edited = members[0], members[len(members) // 2], members[-1]
    fact = "/etc/ansible/facts.d/kubescale_events_etcd.fact"

    def changed(proc, host):
        return re.search(r"%s\s+: ok=\d+\s+changed=[1-9]" % re.escape(host), proc.stdout)

    node(disabled, "systemctl", "disable", "etcd-events")
    node(edited, "sh", "-c", "sed -i 's/\"quota_backend_bytes\": [0-9]*/\"quota_backend_bytes\": 1/' " + fact)
    try:
        check = playbook("playbooks/etcd_events.yml", "--check", "--diff")
        assert check.returncode == 0, check.stdout[-3000:]
        start = check.stdout.split("Enable and start etcd-events.service]")[1].split("TASK [")[0]
        assert re.search(r"changed: \[%s\]" % re.escape(disabled), start), start
        record = check.stdout.split("Record what events_etcd applied]")[-1].split("TASK [")[0]
        assert re.search(r"changed: \[%s\]" % re.escape(edited), record), check.stdout[-3000:]
        assert node(disabled, "systemctl", "is-enabled", "etcd-events", check=False).stdout.strip() == "disabled"
        assert '"quota_backend_bytes": 1' in node(edited, "cat", fact).stdout.replace(",", "")
        run = playbook("playbooks/etcd_events.yml")
        assert run.returncode == 0, run.stdout[-3000:]
        assert changed(run, disabled) and changed(run, edited), run.stdout[-3000:]
        node(stopped, "systemctl", "stop", "etcd-events")
        run = playbook("playbooks/etcd_events.yml", "-l", stopped)
        assert run.returncode == 0 and changed(run, stopped), run.stdout[-3000:]
    finally:
        node(disabled, "systemctl", "enable", "etcd-events")
        node(stopped, "systemctl", "start", "etcd-events")
    assert node(disabled, "systemctl", "is-enabled", "etcd-events").stdout.strip() == "enabled"
    assert node(stopped, "systemctl", "is-active", "etcd-events").stdout.strip() == "active"
    assert '"quota_backend_bytes": 1' not in node(edited, "cat", fact).stdout.replace(",", "")
    again = playbook("playbooks/etcd_events.yml")
    assert again.returncode == 0, again.stdout[-3000:]
    for host in members:
        assert re.search(r"%s\s+: ok=\d+\s+changed=0 " % re.escape(host), again.stdout), again.stdout[-3000:]
