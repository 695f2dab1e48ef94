"""Unit tests for the sysctl_profile logic, on a temp root (fake /proc/sys and sysctl.d dirs)."""

import hashlib
import os

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils.node import sysctl as S

OURS = "/etc/sysctl.d/90-kubescale-arp.conf"
V4 = ["net.ipv4.neigh.default.gc_thresh%d" % i for i in (1, 2, 3)]
V6 = ["net.ipv6.neigh.default.gc_thresh%d" % i for i in (1, 2, 3)]
TARGET = {V4[0]: 80000, V4[1]: 90000, V4[2]: 100000}


class RecordingHost(S.Host):
    """A Host that records live writes and can be told to fail or to lie on read-back."""

    def __init__(self, root, fail_on=None, readonly=(), lie_on=None):
        S.Host.__init__(self, root)
        self.writes = []
        self.fail_on = fail_on
        self.readonly = set(readonly)
        self.lie_on = lie_on

    def live_status(self, key):
        if key in self.readonly:
            return "/proc/sys is read-only here"
        return S.Host.live_status(self, key)

    def write_live(self, key, value):
        if key == self.fail_on and value != self.read_live(key):
            raise OSError(22, "Invalid argument")
        self.writes.append((key, value))
        S.Host.write_live(self, key, value)
        if key == self.lie_on:
            self.lie_on = None  # lie once: the kernel clamped or refused the value
            S.Host.write_live(self, key, "7")


def make_root(tmp_path, live=(128, 512, 1024), v6=True):
    root = str(tmp_path)
    fams = [("ipv4", live)] + ([("ipv6", live)] if v6 else [])
    for fam, values in fams:
        d = os.path.join(root, "proc/sys/net", fam, "neigh/default")
        os.makedirs(d)
        for i, v in enumerate(values, 1):
            with open(os.path.join(d, "gc_thresh%d" % i), "w") as f:
                f.write("%d\n" % v)
    os.makedirs(os.path.join(root, "etc/sysctl.d"))
    return root


def write(root, path, text):
    full = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)


def live(root, key):
    with open(os.path.join(root, "proc/sys", key.replace(".", "/"))) as f:
        return f.read().strip()


def snapshot(root):
    """Checksums of every file under root: proves a failed run touched nothing."""
    out = {}
    for d, _dirs, files in os.walk(root):
        for n in files:
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = hashlib.sha256(f.read()).hexdigest()
    return out


# --------------------------------------------------------------------------- ordering

def test_raising_applies_thresh3_then_2_then_1(tmp_path):
    root = make_root(tmp_path, v6=False)
    host = RecordingHost(root)
    changed, res = S.apply_profile(host, TARGET, OURS)[:2]
    assert changed
    assert res["live_order"] == [V4[2], V4[1], V4[0]]
    assert [write[0] for write in host.writes] == [V4[2], V4[1], V4[0]]
    assert [live(root, k) for k in V4] == ["80000", "90000", "100000"]


def test_lowering_applies_thresh1_then_2_then_3(tmp_path):
    root = make_root(tmp_path, live=(80000, 90000, 100000), v6=False)
    host = RecordingHost(root)
    res = S.apply_profile(host, {V4[0]: 128, V4[1]: 512, V4[2]: 1024}, OURS)[1]
    assert res["live_order"] == [V4[0], V4[1], V4[2]]


def test_every_intermediate_state_keeps_the_rule(tmp_path):
    root = make_root(tmp_path, live=(100, 200, 300), v6=False)
    host = RecordingHost(root)
    seen = []

    def check_after_write(key, value, _orig=host.write_live):
        _orig(key, value)
        seen.append([int(live(root, k)) for k in V4])

    host.write_live = check_after_write
    S.apply_profile(host, {V4[0]: 250, V4[1]: 260, V4[2]: 270}, OURS)
    assert seen and all(a <= b <= c for a, b, c in seen)
    assert seen[-1] == [250, 260, 270]


def test_plan_order_with_extra_rule():
    rules = [{"name": "x", "keys": ["a.b", "a.c"], "relation": "<"}]
    assert S.plan_order({"a.b": "5", "a.c": "6"}, {"a.b": "10", "a.c": "20"}, rules) == ["a.c", "a.b"]


# --------------------------------------------------------------------------- rollback and read-back

def test_failure_rolls_back_live_and_leaves_file(tmp_path):
    root = make_root(tmp_path, v6=False)
    host = RecordingHost(root, fail_on=V4[0])  # order is 3, 2, 1: fails on the last write
    before = snapshot(root)
    with pytest.raises(S.SysctlError) as err:
        S.apply_profile(host, TARGET, OURS)
    assert "rolled back" in str(err.value)
    assert snapshot(root) == before
    assert [live(root, k) for k in V4] == ["128", "512", "1024"]


def test_readback_mismatch_rolls_back(tmp_path):
    root = make_root(tmp_path, v6=False)
    host = RecordingHost(root, lie_on=V4[1])
    before = snapshot(root)
    with pytest.raises(S.SysctlError) as err:
        S.apply_profile(host, TARGET, OURS)
    assert "reads back 7" in str(err.value)
    assert snapshot(root) == before


# --------------------------------------------------------------------------- check mode, idempotence

def test_check_mode_predicts_the_real_run(tmp_path):
    root = make_root(tmp_path)
    host = RecordingHost(root)
    before = snapshot(root)
    settings = dict(TARGET)
    settings.update({V6[0]: 80000, V6[1]: 90000, V6[2]: 100000})
    predicted = S.apply_profile(host, settings, OURS, check_mode=True)
    assert snapshot(root) == before and host.writes == []
    real = S.apply_profile(host, settings, OURS)
    assert predicted == real
    again = S.apply_profile(host, settings, OURS)
    assert again[0] is False and again[1]["live_order"] == []
    assert all(v["drift"] is False for v in again[1]["keys"].values())


def test_diff_shows_file_and_live(tmp_path):
    root = make_root(tmp_path, v6=False)
    diff = S.apply_profile(S.Host(root), TARGET, OURS, check_mode=True)[2]
    assert diff[0]["before"] == "" and "gc_thresh3 = 100000" in diff[0]["after"]
    assert diff[1]["before"].startswith(V4[2] + " = 1024")


def test_auto_persists_only_where_keys_are_absent(tmp_path):
    root = str(tmp_path)
    os.makedirs(os.path.join(root, "etc/sysctl.d"))
    changed, res = S.apply_profile(S.Host(root), TARGET, OURS)[:2]
    assert changed and res["persist_only"] == sorted(V4)
    assert res["keys"][V4[0]]["live_skipped"] == "absent from this network namespace"
    assert res["keys"][V4[0]]["persisted"] == "80000"
    with pytest.raises(S.SysctlError, match="cannot be set live"):
        S.apply_profile(S.Host(root), TARGET, OURS, apply="live")


def test_readonly_proc_sys_persists_only(tmp_path):
    root = make_root(tmp_path, v6=False)
    host = RecordingHost(root, readonly=V4)
    res = S.apply_profile(host, TARGET, OURS)[1]
    assert host.writes == [] and res["persist_only"] == sorted(V4)
    assert res["keys"][V4[2]]["live_skipped"] == "/proc/sys is read-only here"


def test_persist_policy_never_writes_live(tmp_path):
    root = make_root(tmp_path, v6=False)
    host = RecordingHost(root)
    S.apply_profile(host, TARGET, OURS, apply="persist")
    assert host.writes == []


def test_state_absent_removes_keys_then_file(tmp_path):
    root = make_root(tmp_path, v6=False)
    S.apply_profile(S.Host(root), TARGET, OURS)
    changed, res = S.apply_profile(S.Host(root), {V4[0]: 0}, OURS, state="absent")[:2]
    assert changed and res["keys"][V4[0]]["persisted"] is None
    assert V4[0] not in S.Host(root).read(OURS)
    S.apply_profile(S.Host(root), {V4[1]: 0, V4[2]: 0}, OURS, state="absent")
    assert S.Host(root).read(OURS) is None
    assert S.apply_profile(S.Host(root), {V4[1]: 0}, OURS, state="absent")[0] is False


# --------------------------------------------------------------------------- precedence

def test_earlier_file_does_not_override(tmp_path):
    root = make_root(tmp_path, v6=False)
    write(root, "/usr/lib/sysctl.d/50-default.conf", "%s = 1024\n" % V4[2])
    res = S.apply_profile(S.Host(root), TARGET, OURS)[1]
    assert res["keys"][V4[2]]["winning_file"] == OURS


def test_later_file_with_other_value_fails_before_any_change(tmp_path):
    root = make_root(tmp_path, v6=False)
    write(root, "/etc/sysctl.conf", "net/ipv4/neigh/default/gc_thresh3=2048\n")
    os.symlink("../sysctl.conf", os.path.join(root, "etc/sysctl.d/99-sysctl.conf"))
    before = snapshot(root)
    with pytest.raises(S.SysctlError) as err:
        S.apply_profile(RecordingHost(root), TARGET, OURS)
    assert "overridden at boot by /etc/sysctl.d/99-sysctl.conf" in str(err.value)
    assert V4[2] in str(err.value)
    assert snapshot(root) == before


def test_later_file_with_same_value_is_reported_not_fatal(tmp_path):
    root = make_root(tmp_path, v6=False)
    write(root, "/etc/sysctl.d/99-zz.conf", "-%s = 100000\n" % V4[2])
    res = S.apply_profile(S.Host(root), TARGET, OURS)[1]
    assert res["keys"][V4[2]]["winning_file"] == "/etc/sysctl.d/99-zz.conf"


def test_same_name_in_etc_masks_lower_dirs(tmp_path):
    root = make_root(tmp_path, v6=False)
    write(root, "/usr/lib/sysctl.d/99-vendor.conf", "%s = 5000\n" % V4[2])
    write(root, "/etc/sysctl.d/99-vendor.conf", "# masked by the admin\n")
    res = S.apply_profile(S.Host(root), TARGET, OURS)[1]
    assert res["keys"][V4[2]]["winning_file"] == OURS


def test_dev_null_symlink_masks(tmp_path):
    root = make_root(tmp_path, v6=False)
    write(root, "/usr/lib/sysctl.d/99-vendor.conf", "%s = 5000\n" % V4[2])
    os.symlink("/dev/null", os.path.join(root, "etc/sysctl.d/99-vendor.conf"))
    S.apply_profile(S.Host(root), TARGET, OURS)


def test_run_dir_masks_lib_dir_of_same_name(tmp_path):
    root = make_root(tmp_path, v6=False)
    write(root, "/usr/lib/sysctl.d/95-x.conf", "%s = 100000\n" % V4[2])
    write(root, "/run/sysctl.d/95-x.conf", "%s = 300\n" % V4[2])
    with pytest.raises(S.SysctlError, match="overridden at boot by /run/sysctl.d/95-x.conf"):
        S.apply_profile(S.Host(root), TARGET, OURS)


def test_explicit_key_beats_glob_and_glob_reports_otherwise(tmp_path):
    # systemd-sysctl: an explicit assignment takes precedence over a glob, whatever the file order
    root = make_root(tmp_path, v6=False)
    write(root, "/etc/sysctl.d/95-glob.conf", "net.ipv4.neigh.*.gc_thresh3 = 300\n")
    res = S.apply_profile(S.Host(root), TARGET, OURS)[1]
    assert res["keys"][V4[2]]["winning_file"] == OURS
    assert S.boot_lookup(S.Host(root).boot_values(), "net.ipv4.neigh.eth0.gc_thresh3")[1] == "/etc/sysctl.d/95-glob.conf"


def test_our_file_masked_by_same_name_higher_up(tmp_path):
    root = make_root(tmp_path, v6=False)
    write(root, "/etc/sysctl.d/90-kubescale-arp.conf", "# admin copy\n")
    with pytest.raises(S.SysctlError, match="masked"):
        S.apply_profile(S.Host(root), TARGET, "/usr/lib/sysctl.d/90-kubescale-arp.conf")


def test_parse_conf_forms():
    text = "# c\n; c\n-net/ipv4/conf/eth0.100/rp_filter = 1\nkernel.pid_max=  4194304 \nnoequals\n"
    assert S.parse_conf(text) == [("net.ipv4.conf.eth0/100.rp_filter", "1"), ("kernel.pid_max", "4194304")]


# --------------------------------------------------------------------------- bad input

BAD = [
    ({V4[0]: 95000, V4[1]: 90000, V4[2]: 100000}, OURS, "breaks rule 'gc_thresh1 <= gc_thresh2"),
    ({V4[0]: -1, V4[1]: 90000, V4[2]: 100000}, OURS, "out of range"),
    ({V4[0]: "eighty", V4[1]: 90000, V4[2]: 100000}, OURS, "must be an integer"),
    ({V4[0]: 1.5, V4[1]: 90000, V4[2]: 100000}, OURS, "of type float"),
    ({V4[0]: True, V4[1]: 90000, V4[2]: 100000}, OURS, "of type bool"),
    ({V4[0]: 80000, V4[1]: 90000, V4[2]: 2 ** 31}, OURS, "out of range"),
    ({"net.ipv4.neigh.default.gc_thresh9": 1}, OURS, "unknown key net.ipv4.neigh.default.gc_thresh9"),
    ({"net/ipv4/../../etc/passwd": 1}, OURS, "mixes '/' and '.'"),
    ({"net/ipv4//x": 1}, OURS, "not a valid sysctl key"),
    ({"net.ipv4/../x": 1}, OURS, "mixes '/' and '.'"),
    ({"kernel.pid_max;reboot": 1}, OURS, "not a valid sysctl key"),
    ({"kernel.$(id)": 1}, OURS, "not a valid sysctl key"),
    ({V4[2]: "1000\nkernel.panic = 1"}, OURS, "one line"),
    ({}, OURS, "non-empty dict"),
    (TARGET, "/tmp/90-x.conf", "directly inside one of"),
    (TARGET, "/etc/sysctl.d/../sysctl.conf", "directly inside one of"),
    (TARGET, "etc/sysctl.d/90-x.conf", "absolute path"),
    (TARGET, "/etc/sysctl.d/90-x.txt", "ending in .conf"),
    ({V4[0]: 1, "net/ipv4/neigh/default/gc_thresh1": 2}, OURS, "name the same key"),
]


@pytest.mark.parametrize("settings,path,message", BAD)
def test_bad_input_fails_and_touches_nothing(tmp_path, settings, path, message):
    root = make_root(tmp_path, v6=False)
    host = RecordingHost(root)
    before = snapshot(root)
    with pytest.raises(S.SysctlError) as err:
        S.apply_profile(host, settings, path)
    assert message in str(err.value)
    assert host.writes == [] and snapshot(root) == before


def test_rule_against_untouched_live_key(tmp_path):
    root = make_root(tmp_path, live=(128, 512, 1024), v6=False)
    with pytest.raises(S.SysctlError, match="gc_thresh2 = 512"):
        S.apply_profile(S.Host(root), {V4[0]: 600}, OURS)


def test_bad_rules_and_policies(tmp_path):
    root = make_root(tmp_path, v6=False)
    with pytest.raises(S.SysctlError, match=r"rules\[0\].relation"):
        S.apply_profile(S.Host(root), TARGET, OURS, rules=[{"keys": [V4[0], V4[1]], "relation": "=="}])
    with pytest.raises(S.SysctlError, match=r"rules\[0\].keys"):
        S.apply_profile(S.Host(root), TARGET, OURS, rules=[{"keys": [V4[0]]}])
    with pytest.raises(S.SysctlError, match="apply"):
        S.apply_profile(S.Host(root), TARGET, OURS, apply="sometimes")


# --------------------------------------------------------------------------- observed (audits)

def test_observed_reports_an_overriding_file_instead_of_failing_and_writes_nothing(tmp_path):
    root = make_root(tmp_path, live=(80000, 90000, 100000), v6=False)
    S.apply_profile(S.Host(root), TARGET, OURS)
    write(root, "/etc/sysctl.d/99-zz-override.conf", "net.ipv4.neigh.default.gc_thresh3 = 4096\n")
    before = snapshot(root)
    seen = S.observe_profile(S.Host(root), TARGET, OURS)
    assert snapshot(root) == before
    assert seen["file_present"] is True
    k3 = seen["keys"][V4[2]]
    assert k3 == {"wanted": "100000", "live": "100000", "live_status": "ok", "persisted": "100000",
                  "boot": "4096", "winning_file": "/etc/sysctl.d/99-zz-override.conf"}
    assert seen["keys"][V4[0]]["winning_file"] == OURS
    # apply_profile refuses the same state: observed is the read path that reports it.
    with pytest.raises(S.SysctlError):
        S.apply_profile(S.Host(root), TARGET, OURS, check_mode=True)


def test_observed_sees_live_drift_and_a_missing_profile(tmp_path):
    root = make_root(tmp_path, live=(128, 512, 1024), v6=False)
    seen = S.observe_profile(S.Host(root), TARGET, OURS)
    assert seen["file_present"] is False
    assert seen["keys"][V4[1]] == {"wanted": "90000", "live": "512", "live_status": "ok", "persisted": None,
                                   "boot": None, "winning_file": None}


def test_observed_refuses_bad_input_like_present(tmp_path):
    root = make_root(tmp_path, v6=False)
    with pytest.raises(S.SysctlError, match="must be an integer"):
        S.observe_profile(S.Host(root), {V4[0]: "many"}, OURS)
    with pytest.raises(S.SysctlError, match="file"):
        S.observe_profile(S.Host(root), TARGET, "/tmp/x.conf")


def test_the_plan_reads_only_and_names_what_the_write_does(tmp_path):
    root = make_root(tmp_path, v6=False)
    host = RecordingHost(root)
    before = snapshot(root)
    plan = S.plan_profile(host, TARGET, OURS)
    assert snapshot(root) == before and host.writes == []
    assert plan.order == [V4[2], V4[1], V4[0]] and plan.file_changed and plan.changed
    assert plan.keys[V4[2]].before == "1024" and plan.keys[V4[2]].after == "100000"
    assert plan.keys[V4[2]].live_applied and plan.keys[V4[2]].persisted == "100000"
    S.write_profile(host, plan)
    assert [k for k, _v in host.writes] == plan.order and live(root, V4[0]) == "80000"
    assert S.plan_profile(host, TARGET, OURS).changed is False


def test_a_failed_write_of_a_plan_puts_back_the_live_values_and_leaves_the_file(tmp_path):
    root = make_root(tmp_path, v6=False)
    host = RecordingHost(root, fail_on=V4[1])
    plan = S.plan_profile(host, TARGET, OURS)
    with pytest.raises(S.SysctlError, match="rolled back live values of " + V4[2]):
        S.write_profile(host, plan)
    assert [live(root, k) for k in V4] == ["128", "512", "1024"]
    assert not os.path.exists(os.path.join(root, OURS.lstrip("/")))
