# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: flags of a static pod's container (kubeadm's manifests) and kube-apiserver's etcd overrides, as data."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import time

_FLAG = re.compile(r"^--[A-Za-z0-9][A-Za-z0-9-]*$")


class PodError(Exception):
    pass


def check_flag(name):
    if not _FLAG.match(name or ""):
        raise PodError("%r is not a flag name (--name)" % (name,))


def find_container(pod, name=None):
    """The container named `name`, or the only/first one when no name is given."""
    if not isinstance(pod, dict) or pod.get("kind") != "Pod":
        raise PodError("not a Pod manifest (kind: %r)" % (pod.get("kind") if isinstance(pod, dict) else None,))
    containers = (pod.get("spec") or {}).get("containers") or []
    if not containers:
        raise PodError("the Pod has no containers")
    if not name:
        return containers[0]
    for c in containers:
        if c.get("name") == name:
            return c
    raise PodError("no container named %r (found %s)" % (name, ", ".join(str(c.get("name")) for c in containers)))


def flag_values(argv):
    """{--flag: value} of `--flag=value` arguments (a bare `--flag` has value None)."""
    out = {}
    for arg in argv:
        if isinstance(arg, str) and arg.startswith("--"):
            name, sep, value = arg.partition("=")
            out[name] = value if sep else None
    return out


def set_flags(argv, flags):
    """`argv` with each flag of `flags` set in place (or appended), removed when its value is None.

    Returns (new argv, changed flag names). Other arguments keep their order.
    """
    for name in flags:
        check_flag(name)
    new, seen, changed = [], set(), []
    for arg in argv:
        name = arg.partition("=")[0] if isinstance(arg, str) and arg.startswith("--") else None
        if name in flags:
            if name in seen:
                changed.append(name)  # a duplicate goes
                continue
            seen.add(name)
            value = flags[name]
            if value is None:
                changed.append(name)
                continue
            want = "%s=%s" % (name, value)
            if arg != want:
                changed.append(name)
            new.append(want)
        else:
            new.append(arg)
    for name, value in flags.items():
        if name not in seen and value is not None:
            new.append("%s=%s" % (name, value))
            changed.append(name)
    return new, sorted(set(changed))


def volumes(pod, container):
    """The Pod's hostPath volumes as [{name, host_path, mount_path}]; mount_path is where `container` mounts it
    (None when it does not)."""
    mounts = dict((m.get("name"), m.get("mountPath")) for m in container.get("volumeMounts") or [])
    out = []
    for vol in (pod.get("spec") or {}).get("volumes") or []:
        if isinstance(vol, dict) and isinstance(vol.get("hostPath"), dict):
            out.append(dict(name=vol.get("name"), host_path=vol["hostPath"].get("path"),
                            mount_path=mounts.get(vol.get("name"))))
    return out


def set_host_paths(pod, host_paths):
    """Point each hostPath volume named in `host_paths` at its new path; returns the changed volume names.

    Every name is checked before anything is set: a missing volume, or one that is not a hostPath, fails."""
    by_name = dict((v.get("name"), v) for v in (pod.get("spec") or {}).get("volumes") or [] if isinstance(v, dict))
    for name, path in host_paths.items():
        vol = by_name.get(name)
        if vol is None:
            raise PodError("no volume named %r (found %s)" % (name, ", ".join(sorted(str(n) for n in by_name))))
        if not isinstance(vol.get("hostPath"), dict):
            raise PodError("volume %r is not a hostPath volume" % name)
        if not isinstance(path, str) or not path.startswith("/"):
            raise PodError("volume %r: %r is not an absolute path" % (name, path))
    changed = []
    for name, path in sorted(host_paths.items()):
        if by_name[name]["hostPath"].get("path") != path:
            by_name[name]["hostPath"]["path"] = path
            changed.append(name)
    return changed


def set_mount_paths(container, mount_paths):
    """Move the container's mount of each volume named in `mount_paths` to its new path; returns the changed volume
    names. Every name is checked before anything is set: a volume the container does not mount fails."""
    mounts = dict((m.get("name"), m) for m in container.get("volumeMounts") or [] if isinstance(m, dict))
    for name, path in mount_paths.items():
        if name not in mounts:
            raise PodError("the container mounts no volume named %r (it mounts %s)"
                           % (name, ", ".join(sorted(str(n) for n in mounts)) or "none"))
        if not isinstance(path, str) or not path.startswith("/"):
            raise PodError("mount of %r: %r is not an absolute path" % (name, path))
    changed = []
    for name, path in sorted(mount_paths.items()):
        if mounts[name].get("mountPath") != path:
            mounts[name]["mountPath"] = path
            changed.append(name)
    return changed


def set_env(container, name, value):
    """Set (None removes) the container's environment variable `name`; True when it changed."""
    env = container.get("env") or []
    kept = [e for e in env if not (isinstance(e, dict) and e.get("name") == name)]
    want = kept + ([{"name": name, "value": value}] if value is not None else [])
    if want == env:
        return False
    if want:
        container["env"] = want
    else:
        container.pop("env", None)
    return True


# kubeadm writes these containers' volume mounts as a literal list, not sorted (cmd/kubeadm/app/phases/etcd/local.go).
_KUBEADM_MOUNTS = {"etcd": ["etcd-data", "etcd-certs"]}


def kubeadm_order(pod, container, key, extra_names):
    """Order the container's `key` list (command) and the Pod's volumes and mounts as kubeadm renders them, so that
    `kubeadm upgrade` finds the manifest equal to the one it would write: the first non-flag argument (the binary),
    then the flags kubeadm sets itself sorted by name and value, then the ClusterConfiguration's extraArgs in its order
    (`extra_names`); volumes, mounts and environment variables sorted by name, except the mounts kubeadm lists in a
    fixed order (etcd's: its data, then its certificates), which come first in that order. True when anything moved."""
    argv = list(container.get(key) or [])
    head = [a for a in argv[:1] if not (isinstance(a, str) and a.startswith("--"))]
    rest = argv[len(head):]

    def name_of(arg):
        return arg.partition("=")[0][2:] if isinstance(arg, str) and arg.startswith("--") else None

    extra = set(extra_names)
    base = sorted((a for a in rest if name_of(a) not in extra),
                  key=lambda a: (name_of(a) or "", a.partition("=")[2] if isinstance(a, str) else ""))
    ordered = head + base + [a for n in extra_names for a in rest if name_of(a) == n]
    moved = ordered != argv
    container[key] = ordered
    spec = pod.get("spec") or {}
    fixed = _KUBEADM_MOUNTS.get(container.get("name"), [])
    for holder, field in ((spec, "volumes"), (container, "volumeMounts"), (container, "env")):
        items = holder.get(field)
        if isinstance(items, list) and all(isinstance(i, dict) for i in items):
            first = fixed if field == "volumeMounts" else []
            by_name = sorted(items, key=lambda i: (first.index(i.get("name")) if i.get("name") in first else len(first),
                                                   str(i.get("name"))))
            if by_name != items:
                holder[field] = by_name
                moved = True
    return moved


def set_mount(pod, container, name, host_path, mount_path, read_only=True, path_type="File"):
    """Make hostPath volume `name` (host_path, path_type) and the container's mount of it at `mount_path` exist as given;
    returns True when anything changed. A volume of that name that is not a hostPath fails."""
    spec = pod.setdefault("spec", {})
    vols = spec.get("volumes") or []
    spec["volumes"] = vols
    changed = False
    vol = next((v for v in vols if isinstance(v, dict) and v.get("name") == name), None)
    want = {"path": host_path, "type": path_type}
    if vol is None:
        vols.append({"hostPath": want, "name": name})
        changed = True
    elif not isinstance(vol.get("hostPath"), dict):
        raise PodError("volume %r is not a hostPath volume" % name)
    elif vol["hostPath"] != want:
        vol["hostPath"] = want
        changed = True
    mounts = container.get("volumeMounts") or []
    container["volumeMounts"] = mounts
    mount = next((m for m in mounts if isinstance(m, dict) and m.get("name") == name), None)
    want_mount = {"mountPath": mount_path, "name": name, "readOnly": bool(read_only)}
    if mount is None:
        mounts.append(want_mount)
        changed = True
    elif mount.get("mountPath") != mount_path or bool(mount.get("readOnly")) != bool(read_only):
        mount["mountPath"] = mount_path
        mount["readOnly"] = bool(read_only)
        changed = True
    return changed


def set_annotation(pod, key, value):
    """Set (None removes) a metadata annotation; returns True when it changed."""
    meta = pod.setdefault("metadata", {}) or {}
    pod["metadata"] = meta
    notes = meta.get("annotations") or {}
    if notes.get(key) == value or (value is None and key not in notes):
        return False
    if value is None:
        del notes[key]
    else:
        notes[key] = value
    if notes:
        meta["annotations"] = notes
    else:
        meta.pop("annotations", None)
    return True


def parse_locks(text):
    """/proc/locks → the set of (major, minor, inode) holding a lock (FLOCK, POSIX or OFDLCK; waiters too)."""
    held = set()
    for line in (text or "").splitlines():
        fields = [f for f in line.split() if f != "->"]
        # 1: POSIX  ADVISORY  WRITE 1234 08:01:5678 0 EOF   (major and minor in hex, the inode in decimal)
        if len(fields) < 6:
            continue
        dev = fields[5].split(":")
        if len(dev) != 3:
            continue
        try:
            held.add((int(dev[0], 16), int(dev[1], 16), int(dev[2])))
        except ValueError:
            continue
    return held


def locked_files(paths, locks):
    """The files under `paths` (walked, symlinks not followed) whose inode is in `locks` (from parse_locks)."""
    if not locks:
        return []
    found = []
    for top in paths:
        for root, _dirs, files in os.walk(top):
            for name in files:
                full = os.path.join(root, name)
                try:
                    st = os.lstat(full)
                except OSError:
                    continue
                if (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino) in locks:
                    found.append(full)
    return sorted(found)


# Filesystems whose stat() device number is not the superblock's that /proc/locks shows: locks on them are invisible
# to locked_files.
LOCKS_UNSEEN_FS = ("btrfs",)


def fs_type(path, mountinfo):
    """The filesystem type of the mount holding `path` (absolute, resolved), from /proc/self/mountinfo's text."""
    best, kind = "", None
    for line in (mountinfo or "").splitlines():
        left, sep, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if not sep or len(fields) < 5 or not rest:
            continue
        point = fields[4].replace("\\040", " ")
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, rest[0]
    return kind


def parse_overrides(text):
    """kube-apiserver's --etcd-servers-overrides ('group/resource#url;url,...') → [(resource, [urls])]."""
    entries = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        resource, sep, servers = part.partition("#")
        if not sep or not servers or "/" not in resource:
            raise PodError("%r is not a group/resource#servers override" % part)
        entries.append((resource, [s for s in servers.split(";") if s]))
    return entries


def merge_overrides(existing, resource, servers):
    """`existing` overrides with `resource` served by `servers` (replaced in place, or appended); others kept."""
    if "/" not in resource:
        raise PodError("resource %r must be group/resource (the core group is empty: /events)" % resource)
    if not servers:
        raise PodError("give at least one server for %s" % resource)
    entries = parse_overrides(existing)
    out, done = [], False
    for res, urls in entries:
        if res == resource:
            if not done:
                out.append((res, list(servers)))
                done = True
            continue
        out.append((res, urls))
    if not done:
        out.append((resource, list(servers)))
    return ",".join("%s#%s" % (res, ";".join(urls)) for res, urls in out)


# --------------------------------------------------------------------------- a restart, waited for

def uptime_ticks():
    with open("/proc/uptime") as f:
        return float(f.read().split()[0]) * os.sysconf("SC_CLK_TCK")


def processes(binary, needle=None):
    """[(pid, start ticks)] of the processes running `binary` (its base name), with `needle` among their arguments
    when given, from /proc."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().decode("utf-8", "replace").split("\0")
            with open("/proc/%s/stat" % pid) as f:
                stat = f.read()
        except (IOError, OSError):
            continue
        if os.path.basename(argv[0]) == binary and (needle is None or needle in argv):
            found.append((int(pid), int(stat.rpartition(")")[2].split()[19])))
    return found


def answers_ok(url):
    """A readiness check of `url`: HTTP 200 with the body `ok` (the component's own certificate is not verified)."""
    def ready():
        # imported here: most runs of the modules that use this file never ask a URL, and ansible.module_utils.urls
        # (with ssl and http.client) is compiled from the module's zip on every run that imports it
        from ansible.module_utils.urls import open_url
        try:
            resp = open_url(url, timeout=5, validate_certs=False, use_proxy=False)
            return resp.getcode() == 200 and resp.read().strip() == b"ok"
        except Exception:  # refused while it restarts, 500 while it is not ready (or has no lease) yet
            return False
    return ready


def wait_restarted(binary, written_at, ready, timeout, needle=None, sleep=time.sleep, clock=time.time):
    """Wait until a `binary` process started at or after `written_at` (uptime ticks) runs and `ready()` is true, up
    to `timeout` seconds; '' when it did, else why not (no new process, or not ready)."""
    deadline = clock() + timeout
    while True:
        fresh = [pid for pid, start in processes(binary, needle) if start >= written_at]
        if fresh and ready():
            return ""
        if clock() > deadline:
            return "no new %s process" % binary if not fresh else "the new %s is not ready" % binary
        sleep(1)
