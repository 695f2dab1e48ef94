# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: the whole desired state of one tuning's files on a node, in one pass (kubescale.tuning.node_state).

A role hands over its directories, whole files, merged config files, symlinks, systemd units and its local fact;
this module validates all of it first, then compares each with the node and changes only what differs, in this
order: directories, files (a drop-in given for several units is a directory and a file per unit), merges, links,
one daemon-reload when a unit file or drop-in changed, units, and the fact last (so a fact says what was applied
only once it was). Check mode walks the same comparisons and writes nothing;
systemd is asked about units as they are (a unit not installed yet reads as disabled and inactive, so the
prediction is the change the real run makes).

A whole file may come as its sha256 alone (the kubescale.tuning.node_state action sends a large controller-side
`src` that way first): `content_needed` lists those whose file on the node differs, and the module then changes
nothing and returns them, so the action sends only their content, in a second call. A re-converge of unchanged nodes
sends no file's text at all.

`Systemd` wraps systemctl so the unit tests can give a recorded one.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import grp
import hashlib
import json
import os
import pwd
import re
import stat

from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import atomic_write, read_text
from ansible_collections.kubescale.tuning.plugins.module_utils.node.confmerge import FORMATS, ConfError, merge

UNIT_RE = re.compile(r"^[A-Za-z0-9@_.:-]+\.(service|socket|timer|mount|target|path)$")
FACT_NAME_RE = re.compile(r"^[A-Za-z0-9_]+$")
DROPIN_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]*\.conf$")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
# The `fact` option of the modules that record a role's fact in the same call (doc fragment kubescale.tuning.fact).
FACT_ARGUMENT_SPEC = dict(type="dict", options=dict(
    name=dict(type="str", required=True), data=dict(type="dict", required=True),
    directory=dict(type="path", default="/etc/ansible/facts.d")))
# node_state's options: the node_state module's own, and the nested `node_state` option (NODE_STATE_ARGUMENT_SPEC) of
# the modules that finish a tuning in their own call (doc fragment kubescale.tuning.node_state, and its NESTED).
NODE_STATE_OPTIONS = dict(
    directories=dict(type="list", elements="dict", default=[], options=dict(
        path=dict(type="str", required=True), root=dict(type="path"), mode=dict(type="str", default="0755"),
        owner=dict(type="str", default="root"), group=dict(type="str", default="root"))),
    files=dict(type="list", elements="dict", default=[], options=dict(
        path=dict(type="path", required=True), content=dict(type="str", no_log=False),
        src=dict(type="path"), sha256=dict(type="str"),
        mode=dict(type="str", default="0644"), owner=dict(type="str", default="root"),
        group=dict(type="str", default="root"))),
    dropins=dict(type="list", elements="dict", default=[], options=dict(
        units=dict(type="list", elements="str", required=True), name=dict(type="str", required=True),
        content=dict(type="str", required=True))),
    unit_dir=dict(type="path", default="/etc/systemd/system"),
    merges=dict(type="list", elements="dict", default=[], options=dict(
        path=dict(type="path", required=True),
        format=dict(type="str", required=True, choices=["json", "yaml", "toml", "env"]),
        settings=dict(type="dict", required=True), create=dict(type="bool", default=True),
        mode=dict(type="str", default="0644"))),
    links=dict(type="list", elements="dict", default=[], options=dict(
        path=dict(type="path", required=True), target=dict(type="path", required=True))),
    units=dict(type="list", elements="dict", default=[], options=dict(
        name=dict(type="str", required=True), enabled=dict(type="bool"),
        state=dict(type="str", choices=["started"]),
        restart_on=dict(type="list", elements="path", default=[]))),
    fact=FACT_ARGUMENT_SPEC,
)
NODE_STATE_ARGUMENT_SPEC = dict(type="dict", options=NODE_STATE_OPTIONS)
SYSTEMD_DIRS = ("/etc/systemd/system/", "/run/systemd/system/", "/usr/lib/systemd/system/", "/lib/systemd/system/")


class NodeStateError(Exception):
    """Bad input (named by its option) or a step that failed; nothing after it ran."""


def render_fact(data):
    """The same text as `data | to_nice_json` plus a newline (local_fact's format)."""
    return json.dumps(data, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"


def _mode(value, where):
    text = str(value)
    if not re.match(r"^0?[0-7]{3,4}$", text):
        raise NodeStateError("%s: mode %r is not an octal mode like 0644" % (where, value))
    return int(text, 8)


def _uid(name, where):
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        raise NodeStateError("%s: no user %r on this node" % (where, name)) from None


def _gid(name, where):
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        raise NodeStateError("%s: no group %r on this node" % (where, name)) from None


def _abs(path, where):
    if not isinstance(path, str) or not path.startswith("/") or os.path.normpath(path) != path or path == "/":
        raise NodeStateError("%s: %r must be an absolute, normalised path other than /" % (where, path))
    return path


def validate(spec):
    """Check every entry before anything changes; return the normalised spec."""
    out = dict(directories=[], files=[], merges=[], links=[], units=[], fact=None)
    for i, d in enumerate(spec.get("directories") or []):
        where = "directories[%d]" % i
        path = d.get("path")
        if d.get("root"):
            if not isinstance(path, str) or path.startswith("/") or ".." in path.split("/"):
                raise NodeStateError("%s: path %r must be relative to root (no leading /, no '..')" % (where, path))
            path = os.path.normpath(os.path.join(_abs(d["root"], where + ".root"), path))
        out["directories"].append(dict(path=_abs(path, where), mode=_mode(d.get("mode") or "0755", where),
                                       uid=_uid(d.get("owner") or "root", where),
                                       gid=_gid(d.get("group") or "root", where)))
    for i, f in enumerate(spec.get("files") or []):
        where = "files[%d]" % i
        if f.get("src") is not None:
            raise NodeStateError("%s: src is read on the controller by the kubescale.tuning.node_state action, "
                                 "which the module was run without: give content" % where)
        if f.get("content") is None:
            if not isinstance(f.get("sha256"), str) or not SHA256_RE.match(f["sha256"]):
                raise NodeStateError("%s: give content (a string), or its sha256 (64 lowercase hex digits)" % where)
        elif not isinstance(f["content"], str):
            raise NodeStateError("%s: content must be a string" % where)
        elif f.get("sha256") is not None:
            raise NodeStateError("%s: content and sha256 are mutually exclusive" % where)
        out["files"].append(dict(path=_abs(f.get("path"), where), content=f.get("content"), sha256=f.get("sha256"),
                                 mode=_mode(f.get("mode") or "0644", where), uid=_uid(f.get("owner") or "root", where),
                                 gid=_gid(f.get("group") or "root", where)))
    unit_dir = _abs(spec.get("unit_dir") or "/etc/systemd/system", "unit_dir")
    listed = set(d["path"] for d in out["directories"])
    for i, d in enumerate(spec.get("dropins") or []):
        where = "dropins[%d]" % i
        if not isinstance(d.get("name"), str) or not DROPIN_RE.match(d["name"]):
            raise NodeStateError("%s: name %r must be a file name ending in .conf" % (where, d.get("name")))
        if not isinstance(d.get("content"), str):
            raise NodeStateError("%s: content must be a string" % where)
        for unit in d.get("units") or []:
            if not isinstance(unit, str) or not UNIT_RE.match(unit):
                raise NodeStateError("%s: %r is not a systemd unit name" % (where + ".units", unit))
            directory = "%s/%s.d" % (unit_dir, unit)
            if directory not in listed:
                listed.add(directory)
                out["directories"].append(dict(path=directory, mode=0o755, uid=0, gid=0))
            out["files"].append(dict(path="%s/%s" % (directory, d["name"]), content=d["content"], sha256=None,
                                     mode=0o644, uid=0, gid=0))
    for i, m in enumerate(spec.get("merges") or []):
        where = "merges[%d]" % i
        if m.get("format") not in FORMATS:
            raise NodeStateError("%s: format must be one of %s, not %r" % (where, ", ".join(FORMATS), m.get("format")))
        if not isinstance(m.get("settings"), dict) or not m["settings"]:
            raise NodeStateError("%s: settings must be a mapping with at least one key" % where)
        out["merges"].append(dict(path=_abs(m.get("path"), where), format=m["format"], settings=m["settings"],
                                  create=m.get("create", True) is not False,
                                  mode=_mode(m.get("mode") or "0644", where)))
    for i, link in enumerate(spec.get("links") or []):
        where = "links[%d]" % i
        out["links"].append(dict(path=_abs(link.get("path"), where), target=_abs(link.get("target"), where)))
    for i, u in enumerate(spec.get("units") or []):
        where = "units[%d]" % i
        if not isinstance(u.get("name"), str) or not UNIT_RE.match(u["name"]):
            raise NodeStateError("%s: name %r is not a systemd unit name" % (where, u.get("name")))
        if u.get("state") not in (None, "started"):
            raise NodeStateError("%s: state must be started or unset, not %r" % (where, u.get("state")))
        restart_on = [_abs(p, where + ".restart_on") for p in (u.get("restart_on") or [])]
        out["units"].append(dict(name=u["name"], enabled=u.get("enabled"), state=u.get("state"),
                                 restart_on=restart_on))
    fact = spec.get("fact")
    if fact:
        if not isinstance(fact.get("name"), str) or not FACT_NAME_RE.match(fact["name"]):
            raise NodeStateError("fact.name: %r must be letters, digits and underscores" % fact.get("name"))
        if not isinstance(fact.get("data"), dict):
            raise NodeStateError("fact.data must be a mapping")
        out["fact"] = dict(path=os.path.join(_abs(fact.get("directory") or "/etc/ansible/facts.d", "fact.directory"),
                                             fact["name"] + ".fact"), text=render_fact(fact["data"]))
    paths = [e["path"] for key in ("directories", "files", "merges", "links") for e in out[key]]
    if out["fact"]:
        paths.append(out["fact"]["path"])
    seen = set()
    for p in paths:
        if p in seen:
            raise NodeStateError("%s is given twice" % p)
        seen.add(p)
    return out


def file_sha256(path):
    """The sha256 of a file's bytes, or None when it is missing or not a regular file."""
    try:
        with open(path, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            digest = hashlib.sha256()
            for block in iter(lambda: fh.read(1 << 16), b""):
                digest.update(block)
            return digest.hexdigest()
    except (IOError, OSError):
        return None


def content_needed(spec):
    """Indices (into the files option) of files given by sha256 whose file on the node differs from it."""
    return [i for i, f in enumerate(spec["files"]) if f["content"] is None and file_sha256(f["path"]) != f["sha256"]]


class Systemd(object):
    """systemctl through the module's run_command (argv lists)."""

    def __init__(self, run):
        self.run = run

    def _ask(self, verb, name):
        rc, out, err = self.run(["systemctl", verb, name])
        return out.strip().splitlines()[0] if out.strip() else ""

    def is_enabled(self, name):
        return self._ask("is-enabled", name) in ("enabled", "enabled-runtime", "static", "alias", "indirect",
                                                 "generated")

    def is_active(self, name):
        return self._ask("is-active", name) in ("active", "activating", "reloading")

    def do(self, *argv):
        rc, out, err = self.run(["systemctl"] + list(argv))
        if rc != 0:
            raise NodeStateError("systemctl %s failed (rc %d): %s" % (" ".join(argv), rc, (err or out).strip()))


class NodeState(object):
    """Apply (or in check mode, predict) a validated spec; collects changed paths, actions and diffs."""

    def __init__(self, spec, systemd, check_mode=False, want_diff=False, unit_dirs=None):
        self.spec = spec
        self.unit_dirs = tuple(unit_dirs or SYSTEMD_DIRS)
        self.systemd = systemd
        self.check = check_mode
        self.want_diff = want_diff
        self.changed_paths = []
        self.actions = []
        self.diffs = []
        self._made_dirs = set()

    def _changed(self, path, before=None, after=None):
        self.changed_paths.append(path)
        if self.want_diff and (before is not None or after is not None):
            self.diffs.append(dict(before=before or "", after=after or "", before_header=path, after_header=path))

    def _parent_ready(self, path, where):
        parent = os.path.dirname(path)
        if os.path.isdir(parent):
            return
        if self.check and parent in self._made_dirs:
            return
        raise NodeStateError("%s: the directory of %s does not exist (list it in directories)" % (where, path))

    def _owner_mode(self, path, st, want, where):
        """Set mode/owner of an existing path; True when they differed."""
        differs = stat.S_IMODE(st.st_mode) != want["mode"] or st.st_uid != want["uid"] or st.st_gid != want["gid"]
        if differs and not self.check:
            try:
                os.chown(path, want["uid"], want["gid"])
                os.chmod(path, want["mode"])
            except OSError as exc:
                raise NodeStateError("%s: cannot set owner and mode of %s: %s" % (where, path, exc)) from exc
        return differs

    def directories(self):
        for i, d in enumerate(self.spec["directories"]):
            where, path = "directories[%d]" % i, d["path"]
            try:
                st = os.lstat(path)
            except OSError:
                st = None
            if st is not None and not stat.S_ISDIR(st.st_mode):
                raise NodeStateError("%s: %s exists and is not a directory" % (where, path))
            if st is None:
                # Missing parents are made as `mkdir -p` (and the file module) makes them: root, 0755.
                parent = os.path.dirname(path)
                while parent != "/" and not os.path.isdir(parent) and parent not in self._made_dirs:
                    self._made_dirs.add(parent)
                    parent = os.path.dirname(parent)
                self._made_dirs.add(path)
                self._changed(path, "(absent)\n", "(directory, mode %04o)\n" % d["mode"])
                if not self.check:
                    try:
                        if not os.path.isdir(os.path.dirname(path)):
                            os.makedirs(os.path.dirname(path), 0o755)
                        os.mkdir(path, d["mode"])
                        os.chown(path, d["uid"], d["gid"])
                        os.chmod(path, d["mode"])
                    except OSError as exc:
                        raise NodeStateError("%s: cannot create %s: %s" % (where, path, exc)) from exc
            elif self._owner_mode(path, st, d, where):
                self._changed(path, "(directory, mode %04o)\n" % stat.S_IMODE(st.st_mode),
                              "(directory, mode %04o)\n" % d["mode"])

    def _read(self, path, where):
        try:
            return read_text(path)
        except (IOError, OSError, UnicodeDecodeError) as exc:
            raise NodeStateError("%s: cannot read %s: %s" % (where, path, exc)) from exc

    def _write(self, path, text, want, where, before):
        if os.path.isdir(path):
            raise NodeStateError("%s: %s is a directory" % (where, path))
        self._parent_ready(path, where)
        if before is not None and before == text:
            st = os.stat(path)
            if want is not None and self._owner_mode(path, st, want, where):
                self._changed(path, "(mode %04o)\n" % stat.S_IMODE(st.st_mode), "(mode %04o)\n" % want["mode"])
            return
        self._changed(path, before, text)
        if self.check:
            return
        try:
            atomic_write(path, text, want["mode"] if want else 0o644)
            if want is not None:
                os.chown(path, want["uid"], want["gid"])
                os.chmod(path, want["mode"])
        except (IOError, OSError) as exc:
            raise NodeStateError("%s: cannot write %s: %s" % (where, path, exc)) from exc

    def files(self):
        for i, f in enumerate(self.spec["files"]):
            where = "files[%d]" % i
            if f["content"] is None:
                # Given by sha256: apply() runs only when content_needed() found it equal; owner and mode still count.
                if file_sha256(f["path"]) != f["sha256"]:
                    raise NodeStateError("%s: %s changed while the run read it; run again" % (where, f["path"]))
                st = os.stat(f["path"])
                if self._owner_mode(f["path"], st, f, where):
                    self._changed(f["path"], "(mode %04o)\n" % stat.S_IMODE(st.st_mode), "(mode %04o)\n" % f["mode"])
                continue
            self._write(f["path"], f["content"], f, where, self._read(f["path"], where))

    def merges(self):
        for i, m in enumerate(self.spec["merges"]):
            where, path = "merges[%d]" % i, m["path"]
            text = self._read(path, where)
            if text is None and not m["create"]:
                raise NodeStateError("%s: %s does not exist (create: false)" % (where, path))
            try:
                _b, _a, new_text, _paths = merge(m["format"], text, m["settings"], path)
            except ConfError as exc:
                raise NodeStateError("%s: %s" % (where, exc)) from exc
            if new_text is None:
                continue
            # An existing file keeps its owner and mode, as config_merge does.
            self._write(path, new_text, None if text is not None else dict(mode=m["mode"], uid=0, gid=0),
                        where, text)

    def links(self):
        for i, link in enumerate(self.spec["links"]):
            where, path, target = "links[%d]" % i, link["path"], link["target"]
            current = os.readlink(path) if os.path.islink(path) else None
            if current == target:
                continue
            if current is None and os.path.lexists(path) and os.path.isdir(path):
                raise NodeStateError("%s: %s is a directory" % (where, path))
            # A missing parent (a unit's .wants directory) is made as the link's `mkdir -p`: root, 0755.
            self._changed(path, "%s\n" % (current or "(absent)"), "-> %s\n" % target)
            if not self.check:
                tmp = os.path.join(os.path.dirname(path), ".%s.kubescale-tmp" % os.path.basename(path))
                try:
                    if not os.path.isdir(os.path.dirname(path)):
                        os.makedirs(os.path.dirname(path), 0o755)
                    if os.path.lexists(tmp):
                        os.unlink(tmp)
                    os.symlink(target, tmp)
                    os.rename(tmp, path)
                except OSError as exc:
                    raise NodeStateError("%s: cannot link %s to %s: %s" % (where, path, target, exc)) from exc

    def units(self):
        if not self.spec["units"]:
            return
        if any(p.startswith(self.unit_dirs) for p in self.changed_paths):
            self.actions.append("daemon-reload")
            if not self.check:
                self.systemd.do("daemon-reload")
        changed = set(self.changed_paths)
        for u in self.spec["units"]:
            name = u["name"]
            if u["enabled"] is not None and self.systemd.is_enabled(name) != bool(u["enabled"]):
                self.actions.append(("enable " if u["enabled"] else "disable ") + name)
                if not self.check:
                    self.systemd.do("enable" if u["enabled"] else "disable", name)
            active = self.systemd.is_active(name)
            if u["state"] == "started" and not active:
                self.actions.append("start " + name)
                if not self.check:
                    self.systemd.do("start", name)
            elif active and changed.intersection(u["restart_on"]):
                self.actions.append("restart " + name)
                if not self.check:
                    self.systemd.do("restart", name)

    def fact(self):
        fact = self.spec["fact"]
        if not fact:
            return
        path = fact["path"]
        before = self._read(path, "fact")
        if before == fact["text"]:
            return
        directory = os.path.dirname(path)
        if not os.path.isdir(directory) and not self.check:
            try:
                os.makedirs(directory, 0o755)
            except OSError as exc:
                raise NodeStateError("fact: cannot create %s: %s" % (directory, exc)) from exc
        self._made_dirs.add(directory)
        self._write(path, fact["text"], None if before is not None else dict(mode=0o644, uid=0, gid=0), "fact",
                    before)

    def apply(self):
        self.directories()
        self.files()
        self.merges()
        self.links()
        self.units()
        self.fact()
        return dict(changed=bool(self.changed_paths or self.actions), changed_paths=self.changed_paths,
                    actions=self.actions)


def apply_or_fail(module, spec, prefix="", base=None):
    """Apply a validated spec with the module's check and diff mode, as the module's result; fail_json naming what
    changed before an error (its message after `prefix`, with the keys of `base`, a result so far)."""
    state = NodeState(spec, Systemd(module.run_command), check_mode=module.check_mode, want_diff=module._diff)
    try:
        result = state.apply()
    except NodeStateError as exc:
        failed = dict(base or {})
        failed.update(msg=prefix + str(exc), changed=bool(state.changed_paths or state.actions or failed.get("changed")),
                      changed_paths=state.changed_paths, actions=state.actions)
        module.fail_json(**failed)
    if module._diff and state.diffs:
        result["diff"] = state.diffs
    return result


# The nested `node_state` option of a module that finishes a tuning in its own call (local_ssd_probe, store_move,
# image_archive): validated with the module's own input, its files' content checked before the module changes
# anything, applied after the module's own work.

def nested_spec(module, key="node_state", ask_content=True):
    """The validated spec of the module's `key` option (None when not given); bad input fails the module naming
    `key.<option>`, before anything changes. With `ask_content`, require_content() follows."""
    value = module.params.get(key)
    if not value:
        return None
    try:
        spec = validate(value)
    except NodeStateError as exc:
        module.fail_json(msg="%s.%s" % (key, exc))
    if ask_content:
        require_content(module, spec, key)
    return spec


def require_content(module, spec, key="node_state"):
    """A file the node lacks (given by sha256) ends the module here, changing nothing, with RV(content_needed) for
    its action to send the text. Called before the module changes anything (or, by a module that applies the spec
    only sometimes, once it knows it will)."""
    needed = content_needed(spec) if spec else []
    if needed:
        module.exit_json(changed=False, content_needed=needed, **{key: dict(changed_paths=[], actions=[])})


def finish(module, spec, result, key="node_state"):
    """Apply a nested spec after the module's own work: `result` with RV(node_state) (changed_paths, actions),
    changed when either changed, and both diffs. A failure fails the module with `result` and what changed."""
    if spec is None:
        result[key] = dict(changed_paths=[], actions=[])
        return result
    out = apply_or_fail(module, spec, prefix="%s: " % key, base=result)
    result[key] = dict(changed_paths=out["changed_paths"], actions=out["actions"])
    result["changed"] = bool(result.get("changed")) or out["changed"]
    if out.get("diff"):
        own = result.get("diff")
        result["diff"] = ([own] if isinstance(own, dict) else list(own or [])) + list(out["diff"])
    return result
