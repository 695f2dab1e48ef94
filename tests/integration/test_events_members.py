"""Against the lab's Events etcd cluster, one member at a time: a member whose SSD a redeploy wiped is refused by its
guard at boot and stays down until a run re-adds it (wiped again between its re-add and its start, too), then resyncs;
a unit disabled or stopped by hand, or a fact edited by hand, is predicted by --check and put back. The cluster keeps
its quorum throughout, so kube-apiserver stays ready: under the Events cluster's lock only (make lab-test's lab stream,
after test_events_etcd.py), beside the control plane's scheduler and DNS tests. Runs after `make site` converged the
lab."""

import json
import re
import subprocess
import time

import pytest
from events_lab import ENV, apiserver_etcdctl, events_members, events_urls, playbook
from kube import wait_for
from labnode import HOSTS, REPO, lab_ip, node

pytestmark = [pytest.mark.usefixtures("lab"), pytest.mark.usefixtures("events_cluster_lock")]


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
