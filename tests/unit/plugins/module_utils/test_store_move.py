"""store_move's transaction for both runtimes: plan, policy, and stop -> copy -> switch -> start -> check -> rescue.

systemctl and the runtime's client are a small fake whose daemon reads the config file when it starts, as the real
ones do; the copy is real rsync between temporary directories.
"""

import json
import os
import shutil

import pytest
import tomllib

from ansible_collections.kubescale.tuning.plugins.module_utils.node import store_move as sm

RSYNC = shutil.which("rsync")


class FakeNode(object):
    """systemd units and a runtime daemon that, on start, reads its root from the config file."""

    def __init__(self, kind, config_path, proc, images=("sha256:a", "sha256:b")):
        self.kind = kind
        self.config_path = config_path
        self.proc = proc
        self.active = {"kubelet.service", sm.RUNTIMES[kind]["service"]}
        self.root = None
        self.images = list(images)
        self.calls = []
        self.refuse = None  # a config key whose presence makes the daemon exit at start
        self.limited = set()  # units at systemd's start limit until reset-failed
        self.broken = set()  # units that never start
        self._start_daemon()

    def _config(self):
        with open(self.config_path) as f:
            text = f.read()
        return json.loads(text) if self.kind == "docker" else tomllib.loads(text)

    def _start_daemon(self):
        cfg = self._config()
        if self.refuse and self.refuse in cfg:
            self.active.discard(sm.RUNTIMES[self.kind]["service"])
            return False
        self.root = cfg.get(sm.RUNTIMES[self.kind]["root_key"]) or sm.RUNTIMES[self.kind]["default_root"]
        fd_dir = os.path.join(self.proc, "42", "fd")
        shutil.rmtree(fd_dir, ignore_errors=True)
        os.makedirs(fd_dir)
        os.symlink(os.path.join(self.root, "io.containerd.metadata.v1.bolt", "meta.db"), os.path.join(fd_dir, "3"))
        self.active.add(sm.RUNTIMES[self.kind]["service"])
        return True

    def run(self, argv):
        self.calls.append(argv)
        tool = os.path.basename(argv[0])
        if tool == "rsync":
            import subprocess
            proc = subprocess.run(argv, capture_output=True, text=True, check=False)
            return proc.returncode, proc.stdout, proc.stderr
        service = sm.RUNTIMES[self.kind]["service"]
        if tool == "systemctl":
            verb, unit = argv[1], argv[-1]
            if verb == "is-active":
                return (0, "active\n", "") if unit in self.active else (3, "inactive\n", "")
            if verb == "stop":
                self.active.discard(unit)
                return 0, "", ""
            if verb == "reset-failed":
                self.limited.discard(unit)
                return 0, "", ""
            if verb in ("start", "restart"):
                if unit == service:
                    return (0, "", "") if self._start_daemon() else (1, "", "Job for %s failed." % unit)
                if unit in self.limited or unit in self.broken:
                    return 1, "", "Job for %s failed: start request repeated too quickly." % unit
                self.active.add(unit)
                return 0, "", ""
            if verb == "show":
                return 0, ("42\n" if service in self.active else "0\n"), ""
            return 0, "", ""
        if service not in self.active:
            return 1, "", "Cannot connect to the daemon"
        if argv[1:3] == ["image", "ls"] or argv[3:5] == ["images", "list"]:
            on_disk = os.path.exists(os.path.join(self.root, "images.txt"))
            return 0, "\n".join(self.images if on_disk else []) + "\n", ""
        if argv[1] == "info":
            return 0, json.dumps({"DockerRootDir": self.root, "Driver": "overlay2"}), ""
        if argv[1] == "version":
            return 0, "Server: 1.6.20\n", ""
        raise AssertionError(argv)


def runtime(node, kind):
    return sm.Runtime(kind, node.run, {"systemctl": "systemctl", "docker": "docker", "ctr": "ctr"},
                      sleep=lambda s: None, proc=node.proc)


def setup(tmp_path, kind):
    old = tmp_path / "old"
    (old / "sub").mkdir(parents=True)
    (old / "images.txt").write_text("layers")
    (old / "sub" / "blob").write_bytes(b"x" * 4096)
    config = tmp_path / ("daemon.json" if kind == "docker" else "config.toml")
    key = sm.RUNTIMES[kind]["root_key"]
    config.write_text(json.dumps({key: str(old), "labels": ["mine"]}) if kind == "docker"
                      else 'version = 2\n%s = "%s"\n[grpc]\naddress = "/run/c.sock"\n' % (key, old))
    proc = tmp_path / "proc"
    node = FakeNode(kind, str(config), str(proc))
    new = str(tmp_path / "ssd" / kind)
    os.makedirs(os.path.dirname(new))
    settings = {key: new}
    if kind == "docker":
        settings["storage-driver"] = "overlay2"
    return node, str(config), str(old), new, settings


def planned(kind, config, settings, new, text=None):
    text = open(config).read() if text is None else text
    return sm.plan(kind, text, settings, new, sm.RUNTIMES[kind]["default_root"], config)


@pytest.mark.parametrize("kind", ["docker", "containerd"])
def test_plan_sees_the_store_move_and_keeps_user_keys(tmp_path, kind):
    node, config, old, new, settings = setup(tmp_path, kind)
    p = planned(kind, config, settings, new)
    assert p["store_change"] and p["old_root"] == old
    assert sm.decide(kind, p, "copy", True, True, new, "r", "pol") == "move"
    assert sm.decide(kind, p, "empty", True, True, new, "r", "pol") == "write"
    assert sm.decide(kind, p, "copy", False, True, new, "r", "pol") == "write"  # nothing in the old store
    assert sm.decide(kind, p, "copy", True, False, new, "r", "pol") == "write"  # a bake: no service to move
    with pytest.raises(sm.MoveError, match=r"^pol is fail and this run would change .*would hide the images"):
        sm.decide(kind, p, "fail", True, True, new, "r", "pol")
    same = planned(kind, config, {sm.RUNTIMES[kind]["root_key"]: old}, old)
    assert same["new_text"] is None and not same["store_change"]
    assert sm.decide(kind, same, "fail", True, True, old, "r", "pol") == "none"


def test_naming_the_default_root_moves_nothing():
    p = sm.plan("docker", "{}", {"data-root": "/var/lib/docker"}, "/var/lib/docker", "/var/lib/docker", "d.json")
    assert p["new_text"] is not None and not p["store_change"]


def test_a_storage_driver_change_cannot_be_copied():
    text = json.dumps({"storage-driver": "devicemapper", "data-root": "/var/lib/docker"})
    p = sm.plan("docker", text, {"storage-driver": "overlay2", "data-root": "/var/lib/docker"}, "/var/lib/docker",
                "/var/lib/docker", "d.json")
    assert p["store_change"] and p["driver_change"]
    with pytest.raises(sm.MoveError, match="storage driver changes from devicemapper"):
        sm.decide("docker", p, "copy", True, True, "/var/lib/docker", "r", "pol")
    assert sm.decide("docker", p, "empty", True, True, "/var/lib/docker", "r", "pol") == "write"


@pytest.mark.skipif(RSYNC is None, reason="needs rsync")
@pytest.mark.parametrize("kind", ["docker", "containerd"])
def test_a_move_copies_switches_and_checks_root_and_images(tmp_path, kind):
    node, config, old, new, settings = setup(tmp_path, kind)
    p = planned(kind, config, settings, new)
    images = sm.move(runtime(node, kind), p, config, new, ["kubelet.service", "absent.service"], True,
                     "overlay2" if kind == "docker" else None, 10, "r", "pol", rsync=RSYNC)
    assert images == ["sha256:a", "sha256:b"]
    assert node.root == new and open(os.path.join(new, "sub", "blob"), "rb").read() == b"x" * 4096
    assert os.path.exists(os.path.join(old, "images.txt"))  # the old store is kept
    assert "kubelet.service" in node.active and sm.RUNTIMES[kind]["service"] in node.active
    assert not os.path.exists(config + sm.BACKUP_SUFFIX)
    text = open(config).read()
    assert "mine" in text or "/run/c.sock" in text  # the user's keys kept
    stops = [c[2] for c in node.calls if c[:2] == ["systemctl", "stop"]]
    assert stops == ["kubelet.service"] + sm.RUNTIMES[kind]["units"]  # only what ran, then the runtime


@pytest.mark.skipif(RSYNC is None, reason="needs rsync")
@pytest.mark.parametrize("kind", ["docker", "containerd"])
def test_a_full_ssd_puts_everything_back(tmp_path, kind, monkeypatch):
    node, config, old, new, settings = setup(tmp_path, kind)
    before = open(config).read()
    p = planned(kind, config, settings, new)

    class Full(object):
        f_bavail, f_frsize = 1, 512
    real = os.statvfs
    monkeypatch.setattr(sm.os, "statvfs", lambda path: Full() if path.startswith(str(tmp_path / "ssd")) else real(path))
    import ansible_collections.kubescale.tuning.plugins.module_utils.node.dirsync as ds
    monkeypatch.setattr(ds.os, "statvfs", lambda path: Full() if path.startswith(str(tmp_path / "ssd")) else real(path))
    with pytest.raises(sm.MoveError) as exc:
        sm.move(runtime(node, kind), p, config, new, ["kubelet.service"], True, None, 10, "the_root", "the_policy",
                rsync=RSYNC)
    msg = str(exc.value)
    assert msg.startswith("the_root: moving %s's store from %s to %s failed at \"Copy" % (
        sm.RUNTIMES[kind]["name"], old, new))
    assert "bytes free" in msg and "runs again on %s with the %s it had" % (old, sm.RUNTIMES[kind]["config"]) in msg
    assert "set the_policy=empty" in msg
    assert open(config).read() == before and node.root == old
    assert "kubelet.service" in node.active and not os.path.exists(config + sm.BACKUP_SUFFIX)


@pytest.mark.skipif(RSYNC is None, reason="needs rsync")
@pytest.mark.parametrize("kind", ["docker", "containerd"])
def test_a_runtime_that_will_not_start_on_the_new_config_is_restarted_on_the_old(tmp_path, kind):
    node, config, old, new, settings = setup(tmp_path, kind)
    before = open(config).read()
    settings["bad-key"] = "x"
    node.refuse = "bad-key"
    p = planned(kind, config, settings, new)
    with pytest.raises(sm.MoveError, match=r'failed at "Start .* on the new store": systemctl start .*runs again on '
                                           + old + " "):
        sm.move(runtime(node, kind), p, config, new, ["kubelet.service"], True, None, 5, "r", "pol", rsync=RSYNC)
    assert open(config).read() == before and node.root == old and "kubelet.service" in node.active


@pytest.mark.skipif(RSYNC is None, reason="needs rsync")
@pytest.mark.parametrize("kind", ["docker", "containerd"])
def test_lost_images_fail_the_move(tmp_path, kind):
    node, config, old, new, settings = setup(tmp_path, kind)
    before = open(config).read()
    p = planned(kind, config, settings, new)
    start = node._start_daemon

    def start_losing_one():  # the runtime on the new store lists one image fewer
        ok = start()
        node.images = ["sha256:a", "sha256:b"] if node.root == old else ["sha256:a"]
        return ok
    node._start_daemon = start_losing_one
    with pytest.raises(sm.MoveError, match='failed at "Compare the images with the ones before the move": 1 images '
                                           'are missing on the new store, first sha256:b. .* runs again on ' + old):
        sm.move(runtime(node, kind), p, config, new, [], True, None, 5, "r", "pol", rsync=RSYNC)
    assert node.root == old and open(config).read() == before


def test_a_runtime_that_does_not_come_back_keeps_the_backup(tmp_path):
    node, config, old, new, settings = setup(tmp_path, "docker")
    before = open(config).read()
    settings["bad-key"] = "x"
    node.refuse = "bad-key"
    p = planned("docker", config, settings, new)
    rt = runtime(node, "docker")
    real = rt.wait_on
    calls = []

    def wait_on(root, driver, timeout):
        calls.append(root)
        if root == old:
            raise sm.MoveError("docker info failed: boom")
        return real(root, driver, timeout)
    rt.wait_on = wait_on
    with pytest.raises(sm.MoveError, match="does not run on %s .*holds the old daemon.json" % old):
        sm.move(rt, p, config, new, [], True, None, 5, "r", "pol", rsync=RSYNC)
    assert open(config + sm.BACKUP_SUFFIX).read() == before == open(config).read()


@pytest.mark.skipif(RSYNC is None, reason="needs rsync")
def test_a_running_docker_is_stopped_before_containerd_and_started_after_with_its_start_limit_reset(tmp_path):
    node, config, old, new, settings = setup(tmp_path, "containerd")
    node.active.add("docker.service")
    node.limited.add("docker.service")  # the move's restarts put it at its start limit
    p = planned("containerd", config, settings, new)
    sm.move(runtime(node, "containerd"), p, config, new, ["kubelet.service"], True, None, 10, "r", "pol", rsync=RSYNC)
    verbs = [(c[1], c[-1]) for c in node.calls if c[0] == "systemctl" and c[1] in ("stop", "start", "reset-failed")]
    assert verbs[:3] == [("stop", "kubelet.service"), ("stop", "docker.service"), ("stop", "containerd.service")]
    assert verbs[-4:] == [("reset-failed", "kubelet.service"), ("start", "kubelet.service"),
                          ("reset-failed", "docker.service"), ("start", "docker.service")]
    assert {"docker.service", "kubelet.service", "containerd.service"} <= node.active


@pytest.mark.skipif(RSYNC is None, reason="needs rsync")
@pytest.mark.parametrize("full", [False, True])
def test_a_client_that_does_not_start_again_is_named(tmp_path, monkeypatch, full):
    node, config, old, new, settings = setup(tmp_path, "containerd")
    node.broken.add("kubelet.service")
    p = planned("containerd", config, settings, new)
    if full:
        class Full(object):
            f_bavail, f_frsize = 1, 512
        real = os.statvfs
        import ansible_collections.kubescale.tuning.plugins.module_utils.node.dirsync as ds
        monkeypatch.setattr(ds.os, "statvfs",
                            lambda path: Full() if path.startswith(str(tmp_path / "ssd")) else real(path))
    with pytest.raises(sm.MoveError) as exc:
        sm.move(runtime(node, "containerd"), p, config, new, ["kubelet.service"], True, None, 10, "r", "pol",
                rsync=RSYNC)
    msg = str(exc.value)
    assert "kubelet.service did not start again: kubelet.service (Job for kubelet.service failed" in msg
    if full:
        assert "runs again on %s" % old in msg and node.root == old
    else:
        assert msg.startswith("r: containerd's store moved from %s to %s and containerd runs there" % (old, new))
        assert node.root == new


@pytest.mark.skipif(RSYNC is None, reason="needs rsync")
@pytest.mark.parametrize("kind", ["docker", "containerd"])
def test_a_move_after_one_that_died_mid_copy_starts_what_that_one_stopped(tmp_path, kind):
    """Killed mid-copy (the node's session torn down): the kubelet and the runtime stopped, the configuration not yet
    switched, its note left. The next call moves again; the kubelet is not running when it starts, yet it is what the
    dead move stopped, so it is started after this move too, and the notes go."""
    node, config, _old, new, settings = setup(tmp_path, kind)
    with open(config + sm.STOPPED_SUFFIX, "w") as f:
        f.write(json.dumps(["kubelet.service", "cri-dockerd.service"]))
    node.active.discard("kubelet.service")
    node.active.discard("cri-dockerd.service")
    node.active.discard(sm.RUNTIMES[kind]["service"])
    p = planned(kind, config, settings, new)
    sm.move(runtime(node, kind), p, config, new, ["kubelet.service"], False,
            "overlay2" if kind == "docker" else None, 10, "r", "pol", rsync=RSYNC)
    assert node.root == new
    assert {"kubelet.service", "cri-dockerd.service", sm.RUNTIMES[kind]["service"]} <= node.active
    assert not os.path.exists(config + sm.STOPPED_SUFFIX) and not os.path.exists(config + sm.BACKUP_SUFFIX)
    starts = [c[-1] for c in node.calls if c[:2] == ["systemctl", "start"]]
    assert starts[-2:] == ["kubelet.service", "cri-dockerd.service"]  # after the runtime, in the dead move's order


def test_a_note_that_is_not_a_list_of_units_is_no_note(tmp_path):
    config = str(tmp_path / "daemon.json")
    assert sm.read_stopped(config) == []
    for text, units in (("[\"kubelet.service\", 3]", ["kubelet.service"]), ("{}", []), ("[\"kubel", [])):
        with open(config + sm.STOPPED_SUFFIX, "w") as f:
            f.write(text)
        assert sm.read_stopped(config) == units


@pytest.mark.parametrize("kind", ["docker", "containerd"])
def test_what_a_move_that_died_left_is_finished_by_the_next_call(tmp_path, kind):
    """Killed after its switch: the configuration names the new root, the runtime runs there (node_state started it),
    but the units the move stopped are stopped and its notes are left. The next call starts what the move noted it
    stopped (each one's start limit reset first), nothing else, and removes the notes; with no note it does nothing."""
    node, config, _old, _new, _settings = setup(tmp_path, kind)
    rt = runtime(node, kind)
    assert sm.recover(rt, config) == []
    for suffix, text in ((sm.BACKUP_SUFFIX, "the configuration before the move"),
                         (sm.STOPPED_SUFFIX, json.dumps(["kubelet.service"]))):
        with open(config + suffix, "w") as f:
            f.write(text)
    node.active.discard("kubelet.service")
    node.active.discard("docker.service")  # a client the move did not stop: left alone
    node.limited.add("kubelet.service")  # stopped and started within a minute already
    assert sm.recover(rt, config) == ["kubelet.service"]
    assert "kubelet.service" in node.active and "docker.service" not in node.active
    assert not os.path.exists(config + sm.BACKUP_SUFFIX) and not os.path.exists(config + sm.STOPPED_SUFFIX)
    with open(config + sm.STOPPED_SUFFIX, "w") as f:
        f.write(json.dumps(["kubelet.service"]))
    node.active.discard("kubelet.service")
    node.broken.add("kubelet.service")
    with pytest.raises(sm.MoveError, match="left kubelet.service stopped, and it does not start again"):
        sm.recover(rt, config)
    assert os.path.exists(config + sm.STOPPED_SUFFIX)  # kept, with the failure, for the next run and the operator
