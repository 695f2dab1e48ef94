"""etcd_member_info: one member description for systemd and static pod members."""

import os

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils.etcd import member as em

POD = {
    "kind": "Pod",
    "spec": {
        "containers": [{
            "name": "etcd",
            "command": ["etcd", "--name=cp-1", "--data-dir=/var/lib/etcd/", "--advertise-client-urls=https://10.0.0.5:2379",
                        "--initial-advertise-peer-urls=https://10.0.0.5:2380", "--trusted-ca-file=/pki/etcd/ca.crt"],
            "volumeMounts": [{"name": "etcd-data", "mountPath": "/var/lib/etcd"},
                             {"name": "etcd-certs", "mountPath": "/pki/etcd"}],
        }],
        "volumes": [{"name": "etcd-data", "hostPath": {"path": "/mnt/local-ssd/etcd"}},
                    {"name": "etcd-certs", "hostPath": {"path": "/etc/kubernetes/pki/etcd"}}],
    },
}


def test_systemctl_show_with_quoted_environment():
    unit = em.parse_show('LoadState=loaded\nActiveState=active\nEnvironment=A=1 "B=two words" C=\n')
    assert unit["LoadState"] == "loaded" and unit["ActiveState"] == "active"
    assert unit["Environment"] == {"A": "1", "B": "two words", "C": ""}
    assert em.parse_show('Environment=A=1 B="open\n')["Environment"] == {"A": "1", "B": '"open'}


def test_the_env_file_is_read_by_the_one_env_parser_export_included():
    env = em.read_env_file('# Debian\nETCD_NAME="etcd-1"\nexport ETCD_DATA_DIR=/var/lib/etcd/default\n', "/etc/default/etcd")
    assert env == {"ETCD_NAME": "etcd-1", "ETCD_DATA_DIR": "/var/lib/etcd/default"}
    with pytest.raises(em.MemberError, match=r"^etcd_local_disk_env_file /e: line 1 is not NAME=value\. Nothing"):
        em.read_env_file("not an assignment\n", "/e")


def test_systemd_settings_layer_defaults_unit_then_file():
    s = em.systemd_settings({"ETCD_NAME": "unit", "X": "1"}, {"ETCD_NAME": "file"})
    assert s["ETCD_NAME"] == "file" and s["X"] == "1" and s["ETCD_ADVERTISE_CLIENT_URLS"] == "http://localhost:2379"


def test_kind():
    assert em.kind_of("auto", True, "loaded", "/m", "etcd.service") == "static_pod"
    assert em.kind_of("auto", False, "loaded", "/m", "etcd.service") == "systemd"
    assert em.kind_of("systemd", True, "loaded", "/m", "etcd.service") == "systemd"
    with pytest.raises(em.MemberError, match=r"^etcd_local_disk_mode auto: no etcd member to move \(/m absent, "
                                             r"etcd.service LoadState=not-found\)"):
        em.kind_of("auto", False, "not-found", "/m", "etcd.service")
    with pytest.raises(em.MemberError, match="static_pod: no etcd member"):
        em.kind_of("static_pod", False, "loaded", "/m", "etcd.service")


def test_a_static_pods_data_dir_is_its_volumes_host_path():
    settings, flags, vols, volume = em.pod_settings(POD, "etcd")
    assert settings["ETCD_DATA_DIR"] == "/mnt/local-ssd/etcd" and volume == "etcd-data"
    assert settings["ETCD_NAME"] == "cp-1" and settings["ETCD_ADVERTISE_CLIENT_URLS"] == "https://10.0.0.5:2379"
    assert flags["--data-dir"] == "/var/lib/etcd/" and len(vols) == 2


def describe(settings, kind="systemd", target=True, current=True, active="active", recorded=None, marker=""):
    return em.describe(kind, settings, {}, "/mnt/local-ssd/etcd", recorded or {}, marker, target,
                       lambda path: current, active, "auto", "/m", "etcd.service", "/etc/default/etcd")


def test_describe_move_wiped_and_stopped():
    base = dict(em.UNIT_DEFAULTS, ETCD_NAME="etcd-1")
    d = describe(dict(base, ETCD_DATA_DIR="/var/lib/etcd/default"))
    assert d["move"] and not d["wiped"] and d["name"] == "etcd-1" and d["peer_urls"] == ["http://localhost:2380"]
    on_ssd = dict(base, ETCD_DATA_DIR="/mnt/local-ssd/etcd/")
    assert not describe(on_ssd)["move"] and not describe(on_ssd)["wiped"]
    assert describe(on_ssd, target=False)["wiped"]  # no member directory on the SSD
    assert describe(on_ssd, recorded={"ssd_marker": "t1"}, marker="t2")["wiped"]  # formatted since the last run
    assert not describe(on_ssd, recorded={"ssd_marker": "t1"}, marker="t1")["wiped"]
    assert describe(dict(base, ETCD_DATA_DIR="/var/lib/etcd"), active="inactive")["start_stopped"]


def test_describe_refuses_what_it_cannot_move():
    with pytest.raises(em.MemberError, match=r"^etcd.service sets no absolute ETCD_DATA_DIR \(in /etc/default/etcd or "
                                             r"the unit\), got 'relative'\. Nothing was changed\.$"):
        describe({"ETCD_DATA_DIR": "relative"})
    with pytest.raises(em.MemberError, match=r"^/m: the etcd container's --data-dir \(unset\) is not where a hostPath"):
        describe({"ETCD_DATA_DIR": ""}, kind="static_pod")
    with pytest.raises(em.MemberError, match="etcd.service is not running and /var/lib/etcd holds no member data"):
        describe({"ETCD_DATA_DIR": "/var/lib/etcd"}, current=False, active="inactive")


def test_tls_defaults_to_kubeadms_for_an_https_static_pod():
    flags = {"--trusted-ca-file": "/pki/etcd/ca.crt"}
    assert em.tls_files("static_pod", ["https://a:2379"], flags, "", "", "") == dict(
        cacert="/pki/etcd/ca.crt", cert="/pki/etcd/healthcheck-client.crt", key="/pki/etcd/healthcheck-client.key")
    mine = em.tls_files("static_pod", ["https://a:2379"], flags, "/my/ca", "", "")
    assert mine == dict(cacert="/my/ca", cert="", key="")
    assert em.tls_files("systemd", ["https://a:2379"], flags, "", "", "") == dict(cacert="", cert="", key="")


def test_markers_and_records_tolerate_garbage():
    assert em.marker('{"wiped_at": "2026-12-01T10:00:00Z"}') == "2026-12-01T10:00:00Z"
    assert em.marker("") == "" and em.marker("{") == "" and em.marker("[]") == ""
    assert em.recorded('{"endpoints": ["http://a:2379"]}') == {"endpoints": ["http://a:2379"]}
    assert em.recorded("{") == {} and em.recorded("[1]") == {}


FACT = '{"name": "etcd-events-1", "ssd_marker": "2026-12-01T10:00:00Z"}'
MARKER = '{"wiped_at": "2026-12-01T10:00:00Z"}'


@pytest.mark.parametrize("data,fact,mark,members,want", [
    # converged: data, the marker the fact recorded
    (True, FACT, MARKER, 3, dict(wiped=False, rejoin=False, bootstrap=False)),
    # the SSD was formatted since (a new marker): what etcd wrote at boot is not its data; re-added through a peer
    (True, FACT, '{"wiped_at": "2026-12-04T08:00:00Z"}', 3, dict(wiped=True, rejoin=True, bootstrap=False)),
    # a member of a formed cluster that lost its data
    (False, FACT, MARKER, 3, dict(wiped=False, rejoin=True, bootstrap=False)),
    # a lone member starts over rather than rejoining nobody
    (False, FACT, MARKER, 1, dict(wiped=False, rejoin=False, bootstrap=True)),
    # never converged (no fact): part of a brand-new cluster
    (False, None, None, 3, dict(wiped=False, rejoin=False, bootstrap=True)),
    # a fact from before markers were recorded: not wiped, whatever the marker
    (True, '{"name": "etcd-events-1"}', MARKER, 3, dict(wiped=False, rejoin=False, bootstrap=False)),
    # a half-written fact is still a fact: the cluster formed, so re-add rather than bootstrap a second cluster
    (False, '{"name": "etc', None, 3, dict(wiped=False, rejoin=True, bootstrap=False)),
    # the marker gone (not formatted since) against a recorded one: wiped
    (True, FACT, None, 3, dict(wiped=True, rejoin=True, bootstrap=False)),
])
def test_how_a_member_starts(data, fact, mark, members, want):
    plan = em.start_plan(data, fact, mark, members)
    assert {k: plan[k] for k in want} == want
    assert plan["data_exists"] is data
    assert plan["ssd_marker"] == (em.marker(mark))


def test_the_start_plan_returns_what_it_read():
    plan = em.start_plan(True, FACT, MARKER, 3)
    assert plan["recorded"] == {"name": "etcd-events-1", "ssd_marker": "2026-12-01T10:00:00Z"}
    assert plan["ssd_marker"] == "2026-12-01T10:00:00Z"
    assert em.start_plan(True, "[1, 2]", "not json", 3)["recorded"] == {}
    assert em.start_plan(True, "[1, 2]", "not json", 3)["ssd_marker"] == ""


RUNNING = "LoadState=loaded\nActiveState=active\nUnitFileState=enabled\n"


@pytest.mark.parametrize("data,mark,show,running,start", [
    # converged and running: the enable-and-start step has nothing to do
    (True, MARKER, RUNNING, True, False),
    # stopped, failed, disabled, or not installed behind the run's back: it starts or enables the unit
    (True, MARKER, RUNNING.replace("=active", "=inactive"), False, True),
    (True, MARKER, RUNNING.replace("=active", "=failed"), False, True),
    (True, MARKER, RUNNING.replace("=enabled", "=disabled"), False, True),
    (True, MARKER, "LoadState=not-found\nActiveState=inactive\nUnitFileState=\n", False, True),
    # running, but its SSD was wiped (the member is stopped and re-added first) or its data is gone: it starts
    (True, '{"wiped_at": "2026-12-04T08:00:00Z"}', RUNNING, True, True),
    (False, MARKER, RUNNING, True, True),
    # systemd not asked: always
    (True, MARKER, None, False, True),
])
def test_whether_the_unit_needs_starting(data, mark, show, running, start):
    plan = em.start_plan(data, FACT, mark, 3, show)
    assert (plan["running"], plan["start"]) == (running, start)


def test_the_note_of_an_interrupted_move_names_an_old_directory_only_while_it_is_there():
    from ansible_collections.kubescale.tuning.plugins.module_utils.etcd import member as m
    assert m.moved_from_path("/mnt/local-ssd/etcd/") == "/mnt/local-ssd/etcd.moved-from"
    assert m.moved_from("/var/lib/etcd/default\n", lambda p: p == "/var/lib/etcd/default") == "/var/lib/etcd/default"
    assert m.moved_from("/var/lib/etcd/default\n", lambda p: False) == ""  # kept as its backup already
    assert m.moved_from(None, lambda p: True) == "" and m.moved_from("relative", lambda p: True) == ""


def test_a_file_written_after_the_member_started_is_stale_and_one_written_before_is_not(tmp_path):
    from ansible_collections.kubescale.tuning.plugins.module_utils.etcd import member as m
    proc = tmp_path / "proc"
    (proc / "42").mkdir(parents=True)
    ticks = os.sysconf("SC_CLK_TCK")
    # started 100 s after boot; the machine has been up 1,000 s: 900 s ago
    (proc / "42" / "stat").write_text("42 (etcd) S " + " ".join(["0"] * 18) + " %d 0 0" % (100 * ticks))
    (proc / "uptime").write_text("1000.00 1500.00\n")
    started = m.process_started(42, proc=str(proc), now=10000.0)
    assert abs(started - 9100.0) < 0.01
    assert m.process_started(43, proc=str(proc)) is None
    mtimes = {"/etc/default/etcd-events": 9500.0, "/etc/etcd-events/member.crt": 9000.0,
              "/etc/etcd-events/ca.crt": 9100.5}
    reads = sorted(mtimes) + ["/gone"]

    def mtime(path):
        if path not in mtimes:
            raise OSError(2, "No such file")
        return mtimes[path]
    # written 400 s after the start: the member runs without it; 0.5 s after is the same run's write and restart
    assert m.stale_reads(reads, started, mtime) == ["/etc/default/etcd-events"]
    assert m.stale_reads(reads, None, mtime) == []
