"""node_state: validate everything first, then change only what differs; check mode predicts the same changes.

systemctl is a recorded stand-in that keeps enabled/active state and the calls made, the way store_move's tests do;
the files are real, in a temporary directory.
"""

import grp
import json
import os
import pwd
import stat

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils import _node_state as ns

USER = pwd.getpwuid(os.getuid()).pw_name
GROUP = grp.getgrgid(os.getgid()).gr_name


class FakeSystemctl(object):
    def __init__(self, enabled=(), active=(), fail=()):
        self.enabled = set(enabled)
        self.active = set(active)
        self.fail = set(fail)
        self.calls = []

    def __call__(self, argv):
        assert argv[0] == "systemctl"
        verb = argv[1]
        self.calls.append(" ".join(argv[1:]))
        name = argv[2] if len(argv) > 2 else None
        if verb in self.fail:
            return 1, "", "Job for %s failed" % name
        if verb == "is-enabled":
            return (0, "enabled\n", "") if name in self.enabled else (1, "disabled\n", "")
        if verb == "is-active":
            return (0, "active\n", "") if name in self.active else (3, "inactive\n", "")
        if verb == "enable":
            self.enabled.add(name)
        elif verb == "disable":
            self.enabled.discard(name)
        elif verb in ("start", "restart"):
            self.active.add(name)
        return 0, "", ""

    def changes(self):
        return [c for c in self.calls if not c.startswith("is-")]


def spec_for(tmp_path, **extra):
    units = str(tmp_path / "units")
    spec = dict(
        directories=[dict(path=units, mode="0755", owner=USER, group=GROUP),
                     dict(path=units + "/docker.service.d", owner=USER, group=GROUP)],
        files=[dict(path=units + "/ssd.service", content="[Unit]\nDescription=ssd\n", mode="0644", owner=USER,
                    group=GROUP),
               dict(path=units + "/docker.service.d/10-ssd.conf", content="[Unit]\nRequires=ssd.service\n",
                    owner=USER, group=GROUP)],
        merges=[dict(path=str(tmp_path / "config.yaml"), format="yaml", settings={"serializeImagePulls": False})],
        links=[dict(path=str(tmp_path / "wants-ssd.service"), target=units + "/ssd.service")],
        units=[dict(name="ssd.service", enabled=True, state="started"),
               dict(name="kubelet.service", restart_on=[str(tmp_path / "config.yaml")])],
        fact=dict(name="kubescale_test", data={"mount": "/mnt/local-ssd", "n": 1}, directory=str(tmp_path / "facts")),
    )
    spec.update(extra)
    return spec


def run(tmp_path, spec, systemctl, check=False):
    state = ns.NodeState(ns.validate(spec), ns.Systemd(systemctl), check_mode=check, want_diff=True,
                         unit_dirs=[str(tmp_path / "units") + "/"])
    return state.apply(), state


def snapshot(root):
    out = {}
    for dirpath, dirnames, filenames in os.walk(str(root)):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            body = os.readlink(p) if os.path.islink(p) else (open(p).read() if stat.S_ISREG(st.st_mode) else None)
            out[p] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), body)
    return out


def test_first_run_check_predicts_the_real_run_and_the_second_run_changes_nothing(tmp_path):
    spec = spec_for(tmp_path)
    (tmp_path / "config.yaml").write_text("kind: KubeletConfiguration\nserializeImagePulls: true\n")
    before = snapshot(tmp_path)
    checked, _state = run(tmp_path, spec, FakeSystemctl(active={"kubelet.service"}), check=True)
    assert snapshot(tmp_path) == before
    systemctl = FakeSystemctl(active={"kubelet.service"})
    real, state = run(tmp_path, spec, systemctl)
    assert checked == real
    assert real["changed"]
    assert real["actions"] == ["daemon-reload", "enable ssd.service", "start ssd.service", "restart kubelet.service"]
    assert systemctl.changes() == ["daemon-reload", "enable ssd.service", "start ssd.service",
                                   "restart kubelet.service"]
    assert real["changed_paths"][-1] == str(tmp_path / "facts" / "kubescale_test.fact")
    assert json.loads((tmp_path / "facts" / "kubescale_test.fact").read_text()) == {"mount": "/mnt/local-ssd", "n": 1}
    assert (tmp_path / "config.yaml").read_text().count("serializeImagePulls: false") == 1
    assert os.readlink(str(tmp_path / "wants-ssd.service")) == str(tmp_path / "units" / "ssd.service")
    assert len(state.diffs) == len(real["changed_paths"])

    again = FakeSystemctl(enabled=systemctl.enabled, active=systemctl.active)
    second, _state = run(tmp_path, spec, again)
    assert second == dict(changed=False, changed_paths=[], actions=[])
    assert again.changes() == []


def test_drift_behind_the_fact_is_found_and_only_it_is_mended(tmp_path):
    spec = spec_for(tmp_path)
    run(tmp_path, spec, FakeSystemctl())
    dropin = tmp_path / "units" / "docker.service.d" / "10-ssd.conf"
    dropin.write_text("edited by hand\n")
    os.chmod(str(tmp_path / "units" / "ssd.service"), 0o600)
    systemctl = FakeSystemctl(enabled={"ssd.service"}, active={"ssd.service", "kubelet.service"})
    result, _state = run(tmp_path, spec, systemctl)
    assert result["changed_paths"] == [str(tmp_path / "units" / "ssd.service"), str(dropin)]
    assert result["actions"] == ["daemon-reload"]
    assert dropin.read_text() == "[Unit]\nRequires=ssd.service\n"
    assert stat.S_IMODE(os.stat(str(tmp_path / "units" / "ssd.service")).st_mode) == 0o644


def test_a_unit_that_stopped_is_started_and_an_unrelated_change_restarts_nothing(tmp_path):
    spec = spec_for(tmp_path)
    run(tmp_path, spec, FakeSystemctl())
    spec["fact"]["data"]["n"] = 2
    systemctl = FakeSystemctl(enabled={"ssd.service"}, active={"kubelet.service"})
    result, _state = run(tmp_path, spec, systemctl)
    assert result["actions"] == ["start ssd.service"]
    assert result["changed_paths"] == [str(tmp_path / "facts" / "kubescale_test.fact")]


def test_an_existing_merged_file_keeps_its_mode(tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text("a: 1\n")
    os.chmod(str(cfg), 0o600)
    spec = dict(merges=[dict(path=str(cfg), format="yaml", settings={"b": 2})])
    run(tmp_path, spec, FakeSystemctl())
    assert stat.S_IMODE(os.stat(str(cfg)).st_mode) == 0o600
    assert "b: 2" in cfg.read_text()


@pytest.mark.parametrize("bad, message", [
    (dict(files=[dict(path="relative/file", content="x")]), "files[0]: 'relative/file' must be an absolute"),
    (dict(files=[dict(path="/tmp/x", content="x", mode="u+rwx")]), "files[0]: mode 'u+rwx' is not an octal mode"),
    (dict(directories=[dict(path="/tmp/x", owner="no-such-user-kubescale")]), "directories[0]: no user"),
    (dict(merges=[dict(path="/tmp/x", format="ini", settings={"a": 1})]), "merges[0]: format must be one of"),
    (dict(units=[dict(name="kubelet")]), "units[0]: name 'kubelet' is not a systemd unit name"),
    (dict(fact=dict(name="bad-name", data={})), "fact.name: 'bad-name'"),
    (dict(files=[dict(path="/tmp/x", content="a"), dict(path="/tmp/x", content="b")]), "/tmp/x is given twice"),
    (dict(files=[dict(path="/tmp/x", sha256="ABC")]), "files[0]: give content (a string), or its sha256"),
    (dict(files=[dict(path="/tmp/x", content="a", sha256="0" * 64)]), "files[0]: content and sha256 are mutually"),
    (dict(files=[dict(path="/tmp/x", src="script.py")]), "files[0]: src is read on the controller"),
])
def test_bad_input_is_refused_before_anything_changes(tmp_path, bad, message):
    with pytest.raises(ns.NodeStateError) as err:
        ns.validate(bad)
    assert message in str(err.value)


def test_a_file_whose_directory_is_missing_fails_before_any_later_step(tmp_path):
    spec = dict(files=[dict(path=str(tmp_path / "a.conf"), content="a\n"),
                       dict(path=str(tmp_path / "missing" / "b.conf"), content="b\n")],
                fact=dict(name="kubescale_test", data={}, directory=str(tmp_path / "facts")))
    with pytest.raises(ns.NodeStateError) as err:
        run(tmp_path, spec, FakeSystemctl())
    assert "files[1]: the directory of" in str(err.value)
    assert not (tmp_path / "facts").exists()


def test_a_failing_start_stops_before_the_fact(tmp_path):
    spec = spec_for(tmp_path)
    with pytest.raises(ns.NodeStateError) as err:
        run(tmp_path, spec, FakeSystemctl(fail={"start"}))
    assert "systemctl start ssd.service failed" in str(err.value)
    assert not (tmp_path / "facts" / "kubescale_test.fact").exists()


def test_fact_text_matches_local_fact():
    from ansible_collections.kubescale.tuning.plugins.modules import local_fact
    data = {"b": [1, 2], "a": {"z": None, "y": "é"}}
    assert ns.render_fact(data) == local_fact.render(data)


def test_a_dropin_for_several_units_is_a_directory_and_a_file_each(tmp_path):
    units = str(tmp_path / "units")
    os.mkdir(units)
    spec = dict(unit_dir=units, dropins=[dict(units=["docker.service", "containerd.service"], name="10-ssd.conf",
                                              content="[Unit]\nAfter=ssd.service\n")],
                units=[dict(name="docker.service", restart_on=[])])
    systemctl = FakeSystemctl()
    result, _state = run(tmp_path, spec, systemctl)
    assert result["changed_paths"] == [units + "/docker.service.d", units + "/containerd.service.d",
                                       units + "/docker.service.d/10-ssd.conf",
                                       units + "/containerd.service.d/10-ssd.conf"]
    assert result["actions"] == ["daemon-reload"]
    with pytest.raises(ns.NodeStateError) as err:
        ns.validate(dict(dropins=[dict(units=["docker"], name="10-ssd.conf", content="")]))
    assert "dropins[0].units: 'docker' is not a systemd unit name" in str(err.value)


def test_missing_parents_of_a_directory_are_made_in_the_real_run_and_assumed_in_check_mode(tmp_path):
    deep = str(tmp_path / "mnt" / "ssd" / "docker")
    spec = dict(directories=[dict(path=deep, mode="0711", owner=USER, group=GROUP)],
                files=[dict(path=deep + "/marker", content="x\n", owner=USER, group=GROUP)])
    checked, _state = run(tmp_path, spec, FakeSystemctl(), check=True)
    assert not (tmp_path / "mnt").exists()
    real, _state = run(tmp_path, spec, FakeSystemctl())
    assert checked == real == dict(changed=True, changed_paths=[deep, deep + "/marker"], actions=[])
    assert stat.S_IMODE(os.stat(deep).st_mode) == 0o711


def test_directories_relative_to_a_root(tmp_path):
    spec = ns.validate(dict(directories=[dict(root=str(tmp_path), path="docker/overlay2", owner=USER, group=GROUP)]))
    assert spec["directories"][0]["path"] == str(tmp_path / "docker" / "overlay2")
    with pytest.raises(ns.NodeStateError) as err:
        ns.validate(dict(directories=[dict(root=str(tmp_path), path="../etc")]))
    assert "directories[0]: path '../etc' must be relative to root" in str(err.value)


def test_a_link_whose_wants_directory_is_missing_gets_it(tmp_path):
    wants = tmp_path / "local-fs.target.wants"
    spec = dict(links=[dict(path=str(wants / "ssd.service"), target=str(tmp_path / "ssd.service"))])
    checked, _state = run(tmp_path, spec, FakeSystemctl(), check=True)
    assert not wants.exists()
    real, _state = run(tmp_path, spec, FakeSystemctl())
    assert checked == real and real["changed"]
    assert os.readlink(str(wants / "ssd.service")) == str(tmp_path / "ssd.service")
    assert run(tmp_path, spec, FakeSystemctl())[0]["changed"] is False


def test_a_file_given_by_hash_is_asked_for_only_when_the_node_differs(tmp_path):
    """The action's first call sends a script's sha256: a node that has it is checked (owner, mode) and nothing is
    sent; a node that lacks it, or whose copy was edited, makes the module name it and change nothing at all."""
    import hashlib

    text = "#!/usr/bin/python3\nprint('probe')\n" * 500
    digest = hashlib.sha256(text.encode()).hexdigest()
    script = tmp_path / "units" / "probe"
    spec = spec_for(tmp_path)
    spec["files"].append(dict(path=str(script), sha256=digest, mode="0755", owner=USER, group=GROUP))
    before = snapshot(tmp_path)
    assert ns.content_needed(ns.validate(spec)) == [2]
    assert snapshot(tmp_path) == before

    # The action's second call: the text, once.
    full = dict(spec, files=spec["files"][:2] + [dict(spec["files"][2], sha256=None, content=text)])
    checked, _state = run(tmp_path, full, FakeSystemctl(), check=True)
    assert snapshot(tmp_path) == before
    real, _state = run(tmp_path, full, FakeSystemctl())
    assert checked == real and str(script) in real["changed_paths"]
    assert script.read_text() == text and stat.S_IMODE(os.stat(str(script)).st_mode) == 0o755

    # Re-converge: the hash matches, nothing is asked for and nothing changes.
    systemctl = FakeSystemctl(enabled={"ssd.service"}, active={"ssd.service"})
    assert ns.content_needed(ns.validate(spec)) == []
    second, _state = run(tmp_path, spec, systemctl)
    assert second == dict(changed=False, changed_paths=[], actions=[])

    # Only a mode change behind its back: mended without the text.
    os.chmod(str(script), 0o700)
    assert ns.content_needed(ns.validate(spec)) == []
    mended, _state = run(tmp_path, spec, systemctl)
    assert mended["changed_paths"] == [str(script)]
    assert stat.S_IMODE(os.stat(str(script)).st_mode) == 0o755

    # An edited copy: asked for again.
    script.write_text("edited\n")
    assert ns.content_needed(ns.validate(spec)) == [2]


def test_a_file_given_by_hash_that_changes_during_the_run_stops_it(tmp_path):
    import hashlib

    target = tmp_path / "probe"
    target.write_text("one\n")
    spec = dict(files=[dict(path=str(target), sha256=hashlib.sha256(b"one\n").hexdigest(), owner=USER, group=GROUP)])
    state = ns.NodeState(ns.validate(spec), ns.Systemd(FakeSystemctl()))
    target.write_text("two\n")
    with pytest.raises(ns.NodeStateError) as err:
        state.apply()
    assert "changed while the run read it" in str(err.value)
