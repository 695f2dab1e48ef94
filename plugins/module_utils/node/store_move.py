# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: a container runtime's configuration merged, and its store moved when that changes where it lives.

One transaction for docker and containerd (store_move): plan the merge, decide by policy whether the store moves,
then stop -> copy (verified) -> switch the config -> start -> check the runtime's root and images -> start again
what was stopped; on any failure the old config is put back and the runtime restarted on the old store.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import time

from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import atomic_write, remove_file
from ansible_collections.kubescale.tuning.plugins.module_utils.node.confmerge import merge
from ansible_collections.kubescale.tuning.plugins.module_utils.node.dirsync import SyncError, sync

RUNTIMES = {
    "docker": dict(name="Docker", format="json", root_key="data-root", default_root="/var/lib/docker",
                   service="docker.service", units=["docker.service", "docker.socket"], config="daemon.json"),
    # dockerd runs its containers through containerd: a running Docker is stopped before containerd and started after
    # it, whatever stop_units says (left running, it loses containerd, exits and is restarted by systemd until its
    # start limit, 3 in 60 s on Debian, leaves it down).
    "containerd": dict(name="containerd", format="toml", root_key="root", default_root="/var/lib/containerd",
                       service="containerd.service", units=["containerd.service"], config="config.toml",
                       clients=["docker.service"]),
}
BACKUP_SUFFIX = ".kubescale-before-move"
# Beside the configuration while a move runs: the units it stopped, as JSON, for a later call to start again should
# the move die before its end (recover).
STOPPED_SUFFIX = ".kubescale-move-stopped"


class MoveError(Exception):
    """Refused or failed; the message names the variable and says what state the node is in."""


def _value(data, path):
    for part in path:
        data = data.get(part) if isinstance(data, dict) else None
    return data


def plan(runtime, text, settings, root, default_root, path):
    """What merging `settings` into the config text changes, and whether the store moves with it."""
    rt = RUNTIMES[runtime]
    before, after, new_text, paths = merge(rt["format"], text, settings, path)
    keys = [".".join(str(k) for k in kp) for kp in paths]
    top = []
    for kp in paths:
        if kp[0] not in top:
            top.append(kp[0])
    previous = dict((key, _value(before, kp)) for key, kp in zip(keys, paths))
    root_key = rt["root_key"]
    # Unchanged, the root is where the store already is; set for the first time, it was the runtime's default.
    old_root = (previous[root_key] or default_root) if root_key in keys else root
    driver_change = (runtime == "docker" and "storage-driver" in top
                     and previous.get("storage-driver") is not None)
    store_change = driver_change or (root_key in keys and old_root != root)
    return dict(before_text=text, new_text=new_text, config=after, changed_keys=keys, changed_top_keys=top,
                previous=previous, created=text is None and new_text is not None, old_root=old_root,
                store_change=store_change, driver_change=driver_change)


def has_content(directory):
    """Whether the old store holds anything (an absent directory holds nothing)."""
    try:
        return bool(os.listdir(directory))
    except OSError:
        return False


def decide(runtime, p, policy, content, service, root, root_variable, policy_variable):
    """'write' (only the config changes), 'move' (the store is copied over first) or 'none'; raises on refusal."""
    if p["new_text"] is None:
        return "none"
    if not (p["store_change"] and service and content):
        return "write"
    rt = RUNTIMES[runtime]
    if policy == "fail":
        what = " and ".join(k for k in p["changed_top_keys"] if k in (rt["root_key"], "storage-driver"))
        raise MoveError(
            "%s is fail and this run would change %s (%s -> %s), which would hide the images and containers in %s. "
            "Set %s=copy to copy them over (%s is stopped meanwhile) or empty to start with an empty store (the old "
            "one is kept)." % (policy_variable, what, dict((k, p["previous"].get(k)) for k in
                                                           (rt["root_key"], "storage-driver") if k in p["previous"]),
                               root, p["old_root"], policy_variable, rt["name"]))
    if policy == "copy" and p["driver_change"]:
        raise MoveError(
            "%s is copy, but the storage driver changes from %s: images on disk cannot be converted. Set %s=empty to "
            "start with an empty store (the old one is kept in %s) and preload or pull the images again."
            % (policy_variable, p["previous"].get("storage-driver"), policy_variable, p["old_root"]))
    return "move" if policy == "copy" else "write"


class Runtime(object):
    """systemctl and the runtime's own client, through `run(argv) -> (rc, out, err)`."""

    def __init__(self, runtime, run, bins, namespace="k8s.io", sleep=time.sleep, proc="/proc"):
        self.rt = RUNTIMES[runtime]
        self.kind = runtime
        self.run = run
        self.bins = bins
        self.namespace = namespace
        self.sleep = sleep
        self.proc = proc

    def systemctl(self, *args):
        return self.run([self.bins["systemctl"]] + list(args))

    def active(self, unit):
        return self.systemctl("is-active", unit)[1].strip() == "active"

    def images(self):
        if self.kind == "docker":
            argv = [self.bins["docker"], "image", "ls", "--quiet", "--no-trunc"]
        else:
            argv = [self.bins["ctr"], "--namespace", self.namespace, "images", "list", "--quiet"]
        rc, out, err = self.run(argv)
        if rc != 0:
            raise MoveError("listing %s's images failed: %s" % (self.rt["name"], (err or out).strip()))
        return sorted(set(line.strip() for line in out.splitlines() if line.strip()))

    def root_in_use(self):
        """Where the running daemon keeps its store, or raises with why it cannot be told."""
        if self.kind == "docker":
            rc, out, err = self.run([self.bins["docker"], "info", "--format", "{{json .}}"])
            if rc != 0:
                raise MoveError("docker info failed: %s" % (err or out).strip())
            info = json.loads(out)
            return info.get("DockerRootDir"), info.get("Driver")
        rc, out, err = self.run([self.bins["ctr"], "version"])
        if rc != 0:
            raise MoveError("ctr version failed: %s" % (err or out).strip())
        pid = self.systemctl("show", "--property", "MainPID", "--value", self.rt["service"])[1].strip()
        if not pid.isdigit() or pid == "0":
            raise MoveError("containerd.service has no main process")
        fd_dir = os.path.join(self.proc, pid, "fd")
        roots = set()
        for fd in os.listdir(fd_dir):
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            if target.endswith("/io.containerd.metadata.v1.bolt/meta.db"):
                roots.add(target[:-len("/io.containerd.metadata.v1.bolt/meta.db")])
        if len(roots) != 1:
            raise MoveError("containerd (pid %s) holds no metadata database open yet" % pid)
        return roots.pop(), None

    def wait_on(self, root, driver, timeout):
        """Wait until the runtime answers from `root` (with `driver`); raises with the last answer."""
        deadline = time.time() + timeout
        while True:
            try:
                have_root, have_driver = self.root_in_use()
                if os.path.realpath(have_root or "") != os.path.realpath(root):
                    raise MoveError("%s runs on %s, not %s" % (self.rt["name"], have_root, root))
                if driver and have_driver != driver:
                    raise MoveError("%s runs the %s storage driver, not %s" % (self.rt["name"], have_driver, driver))
                return
            except (MoveError, ValueError, OSError) as exc:
                if time.time() >= deadline:
                    raise MoveError(str(exc)) from exc
            self.sleep(2)


def move(rt, p, config_path, root, stop_units, was_active, driver, timeout, root_variable, policy_variable,
         mode=0o644, rsync="rsync"):
    """The transaction. Returns the images carried over; raises MoveError saying where the runtime runs now."""
    name = rt.rt["name"]
    backup = config_path + BACKUP_SUFFIX
    # what a move that died before this one had stopped (its note) is started after this one too: stopped already,
    # it is not active now, and this move's own note would otherwise replace that one
    noted = read_stopped(config_path)
    candidates = list(stop_units) + [c for c in rt.rt.get("clients", []) if c not in stop_units]
    stopped = [u for u in candidates if u in noted or rt.active(u)] + [u for u in noted if u not in candidates]
    images = rt.images() if was_active else None
    if p["before_text"] is not None:
        atomic_write(backup, p["before_text"], mode)
    atomic_write(config_path + STOPPED_SUFFIX, json.dumps(stopped) + "\n", 0o600)
    step = "Stop what uses the store, then %s" % name

    def start_clients():
        """Start again what was stopped (its start limit reset first: the move restarted it within a minute). Returns
        "" when every unit started, else a sentence naming those that did not, each with systemctl's answer."""
        failed = []
        for unit in stopped:
            rt.systemctl("reset-failed", unit)
            rc, out, err = rt.systemctl("start", unit)
            if rc != 0:
                failed.append((unit, (err or out).strip()))
        if not failed:
            return ""
        return " %s did not start again: %s." % (", ".join(unit for unit, _answer in failed),
                                                 "; ".join("%s (%s)" % pair for pair in failed))
    try:
        for unit in stopped + rt.rt["units"]:
            rc, out, err = rt.systemctl("stop", unit)
            if rc != 0:
                raise MoveError("systemctl stop %s: %s" % (unit, (err or out).strip()))
        step = "Copy the old store to the new one and verify the copy"
        try:
            sync(rt.run, rsync, p["old_root"], root)
        except SyncError as exc:
            raise MoveError(str(exc)) from exc
        step = "Switch %s to the new store" % rt.rt["config"]
        atomic_write(config_path, p["new_text"], mode)
        step = "Start %s on the new store" % name
        rt.systemctl("reset-failed", rt.rt["service"])  # the move stopped it within a minute of a start, maybe twice
        rc, out, err = rt.systemctl("start", rt.rt["service"])
        if rc != 0:
            raise MoveError("systemctl start %s: %s" % (rt.rt["service"], (err or out).strip()))
        step = "Check %s runs on the new store" % name
        rt.wait_on(root, driver, timeout)
        step = "Compare the images with the ones before the move"
        if images is not None:
            missing = sorted(set(images) - set(rt.images()))
            if missing:
                raise MoveError("%d images are missing on the new store, first %s" % (len(missing), missing[0]))
    except (MoveError, IOError, OSError) as exc:
        cause = str(exc)
        if p["created"]:
            remove_file(config_path)
        else:
            atomic_write(config_path, p["before_text"], mode)
        rt.systemctl("reset-failed", rt.rt["service"])
        rt.systemctl("restart", rt.rt["service"])
        try:
            rt.wait_on(p["old_root"], None, timeout)
        except MoveError as again:
            not_started = start_clients()
            raise MoveError(
                "%s: moving %s's store from %s to %s failed at \"%s\": %s. The old %s is back, but %s does not run "
                "on %s (%s): see journalctl -u %s; the old store there is untouched and %s holds the old %s.%s"
                % (root_variable, name, p["old_root"], root, step, cause, rt.rt["config"], name, p["old_root"], again,
                   rt.rt["service"], backup, rt.rt["config"], not_started)) from exc
        not_started = start_clients()
        remove_file(config_path + STOPPED_SUFFIX)
        remove_file(backup)
        raise MoveError(
            "%s: moving %s's store from %s to %s failed at \"%s\": %s. %s runs again on %s with the %s it had; "
            "nothing there was changed.%s Fix the cause (free space on the SSD?) and run again, or set %s=empty."
            % (root_variable, name, p["old_root"], root, step, cause, name, p["old_root"], rt.rt["config"],
               not_started, policy_variable)) from exc
    not_started = start_clients()
    remove_file(config_path + STOPPED_SUFFIX)
    remove_file(backup)
    if not_started:
        raise MoveError("%s: %s's store moved from %s to %s and %s runs there with every image, but%s See journalctl "
                        "-u for each." % (root_variable, name, p["old_root"], root, name, not_started))
    return images


def read_stopped(config_path):
    """The units a move noted it stopped (STOPPED_SUFFIX, beside the configuration), in its order; none when there is
    no note (no move died, or it died before it stopped anything) or the note is not a list of names."""
    try:
        with open(config_path + STOPPED_SUFFIX) as f:
            noted = json.load(f)
    except (IOError, OSError, ValueError):
        return []
    return [u for u in noted if isinstance(u, str)] if isinstance(noted, list) else []


def recover(rt, config_path):
    """What a move that died (its controller gone with its node's processes, a node restarted mid-move) left behind,
    finished: the units it had stopped for the move (STOPPED_SUFFIX, beside the configuration) started again, each
    one's start limit reset first, then its notes removed (that list, and the copy of the old configuration). Called
    once the configuration and the runtime agree (no move to do, the runtime started). Returns the units started;
    raises MoveError naming those that do not start (the notes are kept)."""
    note, backup = config_path + STOPPED_SUFFIX, config_path + BACKUP_SUFFIX
    started, failed = [], []
    for unit in read_stopped(config_path):
        if rt.active(unit):
            continue
        rt.systemctl("reset-failed", unit)
        rc, out, err = rt.systemctl("start", unit)
        if rc != 0:
            failed.append("%s (%s)" % (unit, (err or out).strip()))
        else:
            started.append(unit)
    if failed:
        raise MoveError("a move that did not finish left %s stopped, and it does not start again: %s"
                        % (", ".join(f.split(" (")[0] for f in failed), "; ".join(failed)))
    remove_file(note)
    remove_file(backup)
    return started
