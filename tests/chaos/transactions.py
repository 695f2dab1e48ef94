"""The lab's multi-step transactions, each with what puts its node where the collection finds it before the tuning
(`prepare`), the steps a kill may land in, and what must hold once a plain re-run converged (`verify`).

Every transaction leaves the lab as `make site` left it: the ones that change a setting put it back with a run
without the kill (`restore`), and each verify holds after that run too.
"""

import json
import re
import subprocess

import yaml

from tests.chaos.chaos import REPO, RoundFailed, Transaction, node
from tests.integration.kube import kubectl, wait_for
from tests.integration.labnode import hosts_of, lab_ip

KEYS = 300  # the lab's test keys in each etcd cluster (lab/seed.py, lab/kubeadm.py)
CHAOS_KEYS = 50  # written to the Events cluster before its rounds
SSD = "/mnt/local-ssd"
# docker's configuration, its store on the SSD as `make site` leaves it, and the root a docker round moves it to
DOCKER_CONFIG = "/etc/docker/daemon.json"
DOCKER_HOME = SSD + "/docker"
DOCKER_MOVED = SSD + "/docker-chaos"
PKI = "/etc/kubernetes/pki"


def wait(what, test, timeout=180, interval=1):
    return wait_for(what, test, timeout=timeout, interval=interval)


def redeploy(host):
    subprocess.run(["/usr/bin/python3", "-m", "lab", "redeploy", host, "--disk", "blank"], cwd=REPO, check=True,
                   capture_output=True)


# ---------------------------------------------------------------------------------------------- the main etcd

def main_keys(member):
    """The lab's test keys member `member` holds itself (a serializable read of its own endpoint)."""
    out = node(member, "etcdctl", "--endpoints=http://127.0.0.1:2379", "--command-timeout=5s", "get",
               "--consistency=s", "--prefix", "--keys-only", "/kubescale-test/", check=False).stdout.split()
    return len(out)


def main_members(via):
    eps = ",".join("http://%s:2379" % lab_ip(m) for m in hosts_of("etcd"))
    return node(via, "etcdctl", "--endpoints=" + eps, "--command-timeout=5s", "member", "list", "-w", "json",
                check=False).stdout


def verify_main_etcd(member):
    def check():
        members = hosts_of("etcd")
        for m in members:
            wait("%s to answer with all %d keys" % (m, KEYS), lambda m=m: main_keys(m) == KEYS, timeout=120)
        listed = json.loads(main_members(members[0]))["members"]
        names = sorted(x.get("name", "") for x in listed)
        if names != members:
            raise RoundFailed("the main etcd lists %s, not %s (a member left nameless or twice)" % (names, members))
        env = node(member, "cat", "/etc/default/etcd").stdout
        if 'ETCD_DATA_DIR="%s/etcd"' % SSD not in env and "ETCD_DATA_DIR=%s/etcd" % SSD not in env:
            raise RoundFailed("%s does not run from the SSD:\n%s" % (member, env))
        # the data it moved from kept as a backup, never left where a member could start on it again
        if node(member, "test", "-e", "/var/lib/etcd/default", check=False).returncode == 0:
            raise RoundFailed("%s runs from the SSD and its old data directory /var/lib/etcd/default is left as it "
                              "was (not kept as /var/lib/etcd/default.pre-ssd-*)" % member)
        if node(member, "test", "-e", SSD + "/etcd.moved-from", check=False).returncode == 0:
            raise RoundFailed("%s: the move's note %s/etcd.moved-from is left behind" % (member, SSD))
        if re.search(r'^ETCD_INITIAL_CLUSTER_STATE="?existing', env, re.M):
            raise RoundFailed("%s is left at ETCD_INITIAL_CLUSTER_STATE=existing" % member)
        if node(member, "systemctl", "is-active", "etcd", check=False).stdout.strip() != "active":
            raise RoundFailed("%s: etcd.service is not active" % member)
    return check


def back_on_the_os_disk(member):
    """The member as the distro left it, before etcd_local_disk: its data on the OS disk, /var/lib/etcd/default. From a
    member on the SSD (as `make site` leaves it) it is moved back by hand; one already there is left as it is."""
    def prepare():
        wait("%s healthy with all %d keys before the round" % (member, KEYS), lambda: main_keys(member) == KEYS)
        env = node(member, "cat", "/etc/default/etcd").stdout
        data = re.search(r'^ETCD_DATA_DIR="?([^"\n]*)"?$', env, re.M).group(1)
        if data == "/var/lib/etcd/default":
            return
        if data != SSD + "/etcd":
            raise RoundFailed("%s runs from %s, neither the SSD nor the OS disk" % (member, data))
        node(member, "sh", "-euc", """
            systemctl stop etcd
            rm -rf /var/lib/etcd/default /var/lib/etcd/default.pre-ssd-* /var/lib/etcd/default.chaos
            cp -a {ssd}/etcd /var/lib/etcd/default.chaos
            mv /var/lib/etcd/default.chaos /var/lib/etcd/default
            sed -i 's#^ETCD_DATA_DIR=.*#ETCD_DATA_DIR="/var/lib/etcd/default"#' /etc/default/etcd
            rm -rf {ssd}/etcd
            systemctl start etcd
        """.format(ssd=SSD))
        wait("%s healthy on the OS disk" % member, lambda: main_keys(member) == KEYS)
    return prepare


def etcd_move(member="etcd-3"):
    return Transaction(
        name="etcd_move", host=member, stream="etcd", argv=["playbooks/etcd.yml", "-l", member],
        steps=["Stop the member", "Copy the data directory to the SSD", "Point the member at the SSD",
               "Start the member on the SSD", "Wait until the member is healthy and has caught up",
               "Keep the old directory as a backup"],
        prepare=back_on_the_os_disk(member), verify=verify_main_etcd(member), window=3)


def etcd_rejoin(member="etcd-3"):
    return Transaction(
        name="etcd_rejoin", host=member, stream="etcd", argv=["playbooks/etcd.yml", "-l", member],
        steps=["Re-add the member through a healthy peer", "Remove what it wrote after the wipe",
               "Give the member an empty data directory", "Join the existing cluster at the next start",
               "Start the member", "Wait until the member has caught up", "Back to initial-cluster-state new"],
        prepare=lambda: redeploy(member), verify=verify_main_etcd(member), window=2)


# ---------------------------------------------------------------------------------------------- the Events etcd

def events_ctl(*args, url=None):
    """etcdctl with kube-apiserver's own etcd client certificate, from cp-1."""
    eps = url or ",".join("https://%s:2383" % lab_ip(m) for m in hosts_of("etcd_events"))
    return node(hosts_of("kube_control_plane")[0], "etcdctl", "--endpoints=" + eps, "--command-timeout=5s",
                "--cacert=%s/etcd/ca.crt" % PKI, "--cert=%s/apiserver-etcd-client.crt" % PKI,
                "--key=%s/apiserver-etcd-client.key" % PKI, *args, check=False)


def chaos_keys_on(member):
    out = events_ctl("get", "--consistency=s", "--prefix", "--keys-only", "/kubescale-chaos/",
                     url="https://%s:2383" % lab_ip(member)).stdout.split()
    return len(out)


def write_chaos_keys():
    for i in range(CHAOS_KEYS):
        proc = events_ctl("put", "/kubescale-chaos/%03d" % i, "kept")
        if proc.returncode != 0:
            raise RoundFailed("writing the Events cluster's chaos keys: %s" % proc.stderr[-500:])


def verify_events(snapshot_count=None):
    def check():
        for m in hosts_of("etcd_events"):
            wait("%s to answer with all %d chaos keys" % (m, CHAOS_KEYS),
                 lambda m=m: chaos_keys_on(m) == CHAOS_KEYS, timeout=120)
            if node(m, "systemctl", "is-active", "etcd-events", check=False).stdout.strip() != "active":
                raise RoundFailed("%s: etcd-events.service is not active" % m)
            if snapshot_count is not None:
                # the running process's environment (its unit's EnvironmentFile as it was when etcd started)
                env = node(m, "sh", "-c", "tr '\\0' '\\n' < /proc/$(systemctl show -p MainPID --value "
                           "etcd-events)/environ", check=False).stdout.splitlines()
                if "ETCD_SNAPSHOT_COUNT=%d" % snapshot_count not in env:
                    raise RoundFailed("%s's etcd does not run with ETCD_SNAPSHOT_COUNT=%d: %s"
                                      % (m, snapshot_count, [e for e in env if "SNAPSHOT" in e]))
        listed = json.loads(events_ctl("member", "list", "-w", "json").stdout)["members"]
        names = sorted(x.get("name", "") for x in listed)
        if names != hosts_of("etcd_events"):
            raise RoundFailed("the Events cluster lists %s, not %s" % (names, hosts_of("etcd_events")))
    return check


def events_rejoin(member=None):
    member = member or hosts_of("etcd_events")[-1]

    def prepare():
        write_chaos_keys()
        redeploy(member)
    return Transaction(
        name="events_rejoin", host=member, stream="etcd", argv=["playbooks/etcd_events.yml", "-l", member],
        steps=["Stop the member to clear what it wrote on the wiped SSD",
               "Remove the member directory it wrote on the wiped SSD", "Re-add the member through a healthy peer",
               "Admit the member without data", "Apply systemd changes before starting",
               "Enable and start etcd-events.service", "Wait until every member answers healthy over TLS"],
        prepare=prepare, verify=verify_events(), window=2)


def events_rolling_restart():
    """A setting every member restarts for: the role restarts them one at a time in one task (throttle 1); the kill
    lands anywhere in that task's sequence of restarts (up to `window` seconds in) or in the health wait after it."""
    members = hosts_of("etcd_events")
    return Transaction(
        name="events_rolling_restart", host=members[0], stream="etcd",
        argv=["playbooks/etcd_events.yml", "-e", "events_etcd_snapshot_count=10001"],
        steps=["Restart the member for its new configuration or certificates",
               "Wait until every member answers healthy over TLS"],
        prepare=write_chaos_keys, verify=verify_events(10001), restore=["playbooks/etcd_events.yml"],
        after_restore=verify_events(10000), window=6)


# ---------------------------------------------------------------------------------------------- the runtimes' stores

def archive_refs(host):
    fact = json.loads(node(host, "cat", "/etc/ansible/facts.d/kubescale_image_preload.fact").stdout)
    return fact["images"]


def docker_refs(host):
    out = node(host, "docker", "images", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
    return set("docker.io/%s" % r if r.count("/") == 1 and "." not in r.split("/")[0] else
               "docker.io/library/%s" % r if "/" not in r else r for r in out)


def containerd_refs(host):
    out = node(host, "ctr", "--namespace", "k8s.io", "images", "ls", "-q").stdout.split()
    return set(out)


def verify_store(host, root):
    """docker runs from `root`, as daemon.json says, with every image of the preloaded archive, nothing of a move left
    behind, and the kubelet the move stopped running again."""
    def check():
        if node(host, "systemctl", "is-active", "docker", check=False).stdout.strip() != "active":
            raise RoundFailed("%s: docker is not active" % host)
        actual = node(host, "docker", "info", "--format", "{{.DockerRootDir}}").stdout.strip()
        configured = json.loads(node(host, "cat", DOCKER_CONFIG).stdout).get("data-root")
        if (actual, configured) != (root, root):
            raise RoundFailed("%s: docker runs from %s, daemon.json says %s, the run asked for %s"
                              % (host, actual, configured, root))
        missing = sorted(set(archive_refs(host)) - docker_refs(host))
        if missing:
            raise RoundFailed("%s: docker's store lacks %s" % (host, ", ".join(missing)))
        left = node(host, "sh", "-c", "ls %s.kubescale-before-move %s.kubescale-move-stopped 2>/dev/null"
                    % (DOCKER_CONFIG, DOCKER_CONFIG), check=False).stdout.strip()
        if left:
            raise RoundFailed("%s: the move's notes are left behind: %s" % (host, left))
        if node(host, "systemctl", "is-active", "kubelet", check=False).stdout.strip() != "active":
            raise RoundFailed("%s: the kubelet, stopped for the move, is not running again" % host)
    return check


def docker_store_move():
    host = hosts_of("kube_node_cpu")[0]
    playbook_ = "playbooks/node_cpu.yml"
    check_moved, check_home = verify_store(host, DOCKER_MOVED), verify_store(host, DOCKER_HOME)

    def home_again():
        # back on the SSD's own directory (the moved copy, never deleted by the move, goes)
        check_home()
        node(host, "rm", "-rf", DOCKER_MOVED)
    return Transaction(
        name="docker_store_move", host=host, stream="lab",
        argv=[playbook_, "-l", host, "-e", "docker_overlay2_data_root=" + DOCKER_MOVED],
        steps=["Merge the tunings into daemon.json, moving the data-root"], verify=check_moved,
        restore=[playbook_, "-l", host], after_restore=home_again, window=1.5)


CONTAINERD_IMAGE = "docker.io/kubescale-lab/pause:3.9"


def containerd_store_move():
    """The lab's workers run docker, whose containerd keeps its root on the OS disk: containerd_tuning alone (its tag),
    as on a containerd node, moves that root onto the SSD with an image in it, dockerd stopped and started around it
    as containerd's client; then containerd's configuration and root are put back as they were."""
    host = hosts_of("kube_node_gpu")[0]
    moved, saved = "%s/containerd-chaos" % SSD, "/var/tmp/kubescale-chaos-containerd"
    args = ["playbooks/node_gpu.yml", "-l", host, "--tags", "kubescale_containerd_tuning",
            "-e", "kubescale_container_runtime=containerd"]

    def prepare():
        node(host, "sh", "-euc", """
            mkdir -p {saved}
            cp -a /etc/containerd/config.toml {saved}/config.toml
            docker save {image} | ctr -n k8s.io images import - >/dev/null
        """.format(saved=saved, image=CONTAINERD_IMAGE))
        if CONTAINERD_IMAGE not in containerd_refs(host):
            raise RoundFailed("%s: containerd does not list %s after its import" % (host, CONTAINERD_IMAGE))

    def verify():
        for unit in ("containerd", "docker", "kubelet"):
            if node(host, "systemctl", "is-active", unit, check=False).stdout.strip() != "active":
                raise RoundFailed("%s: %s is not active" % (host, unit))
        pid = node(host, "systemctl", "show", "-p", "MainPID", "--value", "containerd").stdout.strip()
        held = node(host, "ls", "-l", "/proc/%s/fd" % pid).stdout
        configured = re.search(r'^root\s*=\s*"([^"]*)"', node(host, "cat", "/etc/containerd/config.toml").stdout,
                               re.M)
        if moved + "/io.containerd.metadata.v1.bolt/meta.db" not in held or not configured or \
                configured.group(1) != moved:
            raise RoundFailed("%s: containerd does not run from %s as its configuration says (%s)"
                              % (host, moved, configured and configured.group(1)))
        if CONTAINERD_IMAGE not in containerd_refs(host):
            raise RoundFailed("%s: containerd's store on %s lacks %s" % (host, moved, CONTAINERD_IMAGE))
        left = node(host, "sh", "-c", "ls /etc/containerd/config.toml.kubescale-* 2>/dev/null", check=False)
        if left.stdout.strip():
            raise RoundFailed("%s: the move's notes are left behind: %s" % (host, left.stdout.strip()))
        if node(host, "docker", "info", check=False).returncode != 0:
            raise RoundFailed("%s: dockerd does not answer after containerd moved under it" % host)

    def put_back():
        node(host, "sh", "-euc", """
            systemctl stop docker.socket docker containerd
            cp -a {saved}/config.toml /etc/containerd/config.toml
            rm -f /etc/ansible/facts.d/kubescale_containerd_tuning.fact
            systemctl start containerd docker
            ctr -n k8s.io images rm {image} >/dev/null 2>&1 || true
            rm -rf {moved} {saved}
        """.format(saved=saved, moved=moved, image=CONTAINERD_IMAGE))
        verify_store(host, DOCKER_HOME)()
    return Transaction(
        name="containerd_store_move", host=host, stream="lab",
        argv=args + ["-e", "containerd_tuning_root=" + moved],
        steps=["Merge the tunings into config.toml, moving the root"], prepare=prepare, verify=verify,
        restore=None, after_restore=None, cleanup=put_back, window=1.5)


def image_load():
    host = hosts_of("kube_node_cpu")[-1]

    def prepare():
        refs = archive_refs(host)
        node(host, "sh", "-c", "docker rmi -f %s >/dev/null 2>&1 || true" % " ".join(refs))
        if set(refs) & docker_refs(host):
            raise RoundFailed("%s still holds %s" % (host, sorted(set(refs) & docker_refs(host))))
    return Transaction(
        name="image_load", host=host, stream="lab",
        argv=["playbooks/node_cpu.yml", "-l", host, "--tags", "kubescale_image_preload"],
        steps=["Check the pause image, load the archive"], prepare=prepare,
        verify=verify_store(host, DOCKER_HOME), window=0.8)


# ---------------------------------------------------------------------------------------------- the control plane

def apiserver_ready():
    return kubectl("get", "--raw=/readyz", check=False, timeout="5s").stdout.strip() == "ok"


def local_ok(host, url):
    """Whether `url` on node `host` (the component's own /healthz or /readyz, TLS unverified) answers ok."""
    probe = ("import ssl, urllib.request, sys; c = ssl.create_default_context(); c.check_hostname = False; "
             "c.verify_mode = ssl.CERT_NONE; sys.stdout.write(urllib.request.urlopen(sys.argv[1], context=c, "
             "timeout=5).read().decode())")
    return node(host, "python3", "-c", probe, url, check=False).stdout.strip() == "ok"


def cmdline(host, binary):
    return node(host, "sh", "-c", "tr '\\0' '\\n' < /proc/$(pgrep -xo %s)/cmdline" % binary,
                check=False).stdout.splitlines()


def verify_scheduler(host, weight):
    def check():
        wait("kube-apiserver /readyz through the endpoint", apiserver_ready)
        wait("%s's kube-scheduler healthy on its --config" % host, lambda: any(
            f.startswith("--config=") for f in cmdline(host, "kube-scheduler")) and local_ok(
            host, "https://127.0.0.1:10259/healthz"))
        config = [f.split("=", 1)[1] for f in cmdline(host, "kube-scheduler") if f.startswith("--config=")][0]
        profiles = yaml.safe_load(node(host, "cat", config).stdout)["profiles"]
        packing = [p for p in profiles if p["schedulerName"] == "bin-packing"][0]
        fit = [c for c in packing["pluginConfig"] if c["name"] == "NodeResourcesFit"][0]["args"]
        got = fit["scoringStrategy"]["resources"][0]["weight"]
        if got != weight:
            raise RoundFailed("%s: the running scheduler's config has cpu weight %s, not %s" % (host, got, weight))
    return check


def scheduler_edit():
    host = hosts_of("kube_control_plane")[-1]
    argv = ["playbooks/control_plane.yml", "-l", host, "--tags", "kubescale_scheduler_binpack"]
    resources = '[{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 1}]'
    return Transaction(
        name="scheduler_edit", host=host, stream="control_plane",
        argv=argv + ["-e", '{"scheduler_binpack_resources": %s}' % resources],
        steps=["Write the bin-packing profile, wire --config"], verify=verify_scheduler(host, 2), restore=argv,
        after_restore=verify_scheduler(host, 1), window=1.5)


def verify_apiserver(host, limit):
    def check():
        wait("kube-apiserver /readyz through the endpoint", apiserver_ready)
        wait("%s's kube-apiserver on --max-requests-inflight=%d" % (host, limit),
             lambda: "--max-requests-inflight=%d" % limit in cmdline(host, "kube-apiserver"))
        wait("%s's kube-apiserver ready" % host, lambda: local_ok(host, "https://127.0.0.1:6443/readyz"))
    return check


def apiserver_edit():
    host = hosts_of("kube_control_plane")[-1]
    argv = ["playbooks/control_plane.yml", "-l", host, "--tags", "kubescale_apiserver_load"]
    return Transaction(
        name="apiserver_edit", host=host, stream="control_plane",
        argv=argv + ["-e", "apiserver_load_max_requests_inflight=900"],
        steps=["Set kube-apiserver's inflight limits in its manifest"], verify=verify_apiserver(host, 900),
        restore=argv, after_restore=verify_apiserver(host, 800), window=10)


ALL = {
    "etcd_move": etcd_move,
    "etcd_rejoin": etcd_rejoin,
    "events_rejoin": events_rejoin,
    "events_rolling_restart": events_rolling_restart,
    "docker_store_move": docker_store_move,
    "containerd_store_move": containerd_store_move,
    "image_load": image_load,
    "scheduler_edit": scheduler_edit,
    "apiserver_edit": apiserver_edit,
}
