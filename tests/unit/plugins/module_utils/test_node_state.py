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

from ansible_collections.kubescale.tuning.plugins.module_utils.node import state as ns

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


# The nested `node_state` option of the modules that finish a tuning in their own call (store_move, image_archive,
# local_ssd_probe): validated with the module's input, its content asked for before any change, applied after.

class Ended(Exception):
    def __init__(self, failed, result):
        super().__init__(result.get("msg"))
        self.failed, self.result = failed, result


class FakeModule(object):
    """What nested_spec/require_content/finish use of an AnsibleModule; exit_json and fail_json end the run."""

    def __init__(self, params, systemctl, check_mode=False, diff=True):
        self.params, self.check_mode, self._diff = params, check_mode, diff
        self.systemctl = systemctl

    def run_command(self, argv):
        return self.systemctl(argv)

    def exit_json(self, **result):
        raise Ended(False, result)

    def fail_json(self, **result):
        raise Ended(True, result)


@pytest.fixture(autouse=True)
def unit_dirs(tmp_path, monkeypatch):
    """The test's units directory is where systemd reads units (a change there wants a daemon-reload)."""
    monkeypatch.setattr(ns, "SYSTEMD_DIRS", (str(tmp_path / "units") + "/",))


def nested_run(tmp_path, spec, systemctl, check=False, own=None):
    """A module's run: its own result `own` (changed, diff), then the nested state, as the modules call them."""
    module = FakeModule(dict(node_state=spec), systemctl, check_mode=check)
    state = ns.nested_spec(module)
    return ns.finish(module, state, dict(own or dict(changed=False)))


def test_nested_state_is_applied_after_the_modules_own_work_and_check_mode_predicts_it(tmp_path):
    spec = spec_for(tmp_path)
    (tmp_path / "config.yaml").write_text("kind: KubeletConfiguration\n")
    own = dict(changed=True, diff=dict(before="a\n", after="b\n"), moved=False)
    before = snapshot(tmp_path)
    checked = nested_run(tmp_path, spec, FakeSystemctl(), check=True, own=own)
    assert snapshot(tmp_path) == before
    systemctl = FakeSystemctl()
    real = nested_run(tmp_path, spec, systemctl, own=own)
    assert checked == real
    assert real["changed"] and real["moved"] is False
    assert real["node_state"]["actions"] == ["daemon-reload", "enable ssd.service", "start ssd.service"]
    # the module's own diff first, then node_state's, one per changed path
    assert real["diff"][0] == own["diff"] and len(real["diff"]) == 1 + len(real["node_state"]["changed_paths"])
    # the module's own work unchanged and the state in place: nothing changes, nothing is reported
    again = nested_run(tmp_path, spec, systemctl, own=dict(changed=False))
    assert again == dict(changed=False, node_state=dict(changed_paths=[], actions=[]))


def test_no_nested_state_reports_an_empty_one():
    module = FakeModule(dict(node_state=None), FakeSystemctl())
    assert ns.nested_spec(module) is None
    assert ns.finish(module, None, dict(changed=True)) == dict(changed=True,
                                                               node_state=dict(changed_paths=[], actions=[]))


def test_bad_nested_input_fails_naming_node_state_before_anything_changes(tmp_path):
    spec = spec_for(tmp_path, units=[dict(name="no unit name")])
    before = snapshot(tmp_path)
    with pytest.raises(Ended) as end:
        ns.nested_spec(FakeModule(dict(node_state=spec), FakeSystemctl()))
    assert end.value.failed and end.value.result["msg"] == "node_state.units[0]: name 'no unit name' is not a systemd unit name"
    assert snapshot(tmp_path) == before


def test_a_nested_file_the_node_lacks_ends_the_module_asking_for_its_text(tmp_path):
    import hashlib

    target = tmp_path / "probe"
    spec = dict(files=[dict(path=str(target), sha256=hashlib.sha256(b"one\n").hexdigest(), owner=USER, group=GROUP)])
    module = FakeModule(dict(node_state=spec), FakeSystemctl())
    # a module that applies it only sometimes validates first and asks later
    state = ns.nested_spec(module, ask_content=False)
    with pytest.raises(Ended) as end:
        ns.require_content(module, state)
    assert not end.value.failed
    assert end.value.result == dict(changed=False, content_needed=[0], node_state=dict(changed_paths=[], actions=[]))
    assert not target.exists()
    target.write_text("one\n")
    ns.require_content(module, state)  # the node has it: the module goes on


def test_a_nested_state_that_fails_fails_the_module_with_its_own_result(tmp_path):
    spec = dict(units=[dict(name="ssd.service", state="started")])
    with pytest.raises(Ended) as end:
        nested_run(tmp_path, spec, FakeSystemctl(fail={"start"}), own=dict(changed=True, moved=True))
    r = end.value.result
    assert end.value.failed and r["msg"].startswith("node_state: ") and "start ssd.service" in r["msg"]
    assert r["moved"] is True and r["changed"] is True
