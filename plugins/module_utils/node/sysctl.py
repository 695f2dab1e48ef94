# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: the logic behind kubescale.tuning.sysctl_profile.

Everything works on a `Host` rooted at a directory, so unit tests run it on a temp tree.
`plan_profile` validates every input and decides every change, reading only; `write_profile` writes a plan;
`apply_profile` is the two in a row (the plan alone in check mode).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import os
import re
from dataclasses import asdict, dataclass
from typing import Dict, List, NamedTuple, Optional

from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import (
    atomic_write,
    read_text,
    remove_file,
)

# systemd-sysctl's search path, highest priority first (sysctl.d(5)).
SYSCTL_DIRS = (
    "/etc/sysctl.d",
    "/run/sysctl.d",
    "/usr/local/lib/sysctl.d",
    "/usr/lib/sysctl.d",
    "/lib/sysctl.d",
)
INT32_MAX = 2 ** 31 - 1
_COMPONENT = r"[A-Za-z0-9_][A-Za-z0-9_-]*"
KEY_RE = re.compile(r"^%s(\.%s)+$" % (_COMPONENT, _COMPONENT))
FILE_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]*\.conf$")
INT_RE = re.compile(r"^-?[0-9]+$")
SAFE_VALUE_RE = re.compile(r"^[\x20-\x7e\t]+$")
RELATIONS = {
    "<=": lambda a, b: a <= b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
}


def _neigh_keys(family):
    return ["net.%s.neigh.default.gc_thresh%d" % (family, i) for i in (1, 2, 3)]


# Keys whose type and range are known even where this namespace does not show them
# (net.*.neigh.default.* exists only in the initial network namespace).
CATALOGUE = {}
for _fam in ("ipv4", "ipv6"):
    for _k in _neigh_keys(_fam):
        CATALOGUE[_k] = {"type": "int", "min": 0, "max": INT32_MAX}
    for _k in ("gc_interval", "gc_stale_time"):
        CATALOGUE["net.%s.neigh.default.%s" % (_fam, _k)] = {"type": "int", "min": 0, "max": INT32_MAX}

# The kernel does not enforce gc_thresh1 <= gc_thresh2 <= gc_thresh3; a profile must.
BUILTIN_RULES = [
    {"name": "gc_thresh1 <= gc_thresh2 <= gc_thresh3 (%s)" % fam, "keys": _neigh_keys(fam), "relation": "<="}
    for fam in ("ipv4", "ipv6")
]


class SysctlError(Exception):
    """An input or host state that stops the run before (or instead of) any change."""


# --------------------------------------------------------------------------- parsing and validation

def normalize_key(raw):
    """Dotted form of a sysctl key; slash form (net/ipv4/...) is accepted and converted."""
    if not isinstance(raw, str) or not raw:
        raise SysctlError("settings: key %r is not a non-empty string" % (raw,))
    key = raw.strip()
    if "/" in key:
        if "." in key or key.startswith("/"):
            raise SysctlError(
                "settings: key %r mixes '/' and '.' or is a path; write it as dotted components "
                "like net.ipv4.neigh.default.gc_thresh1 (letters, digits, '_' and '-')" % raw)
        key = key.replace("/", ".")
    if not KEY_RE.match(key):
        raise SysctlError(
            "settings: key %r is not a valid sysctl key; allowed: dotted components of letters, digits, "
            "'_' and '-', like net.ipv4.neigh.default.gc_thresh1" % raw)
    return key


def normalize_value(key, value, spec, live_value):
    """The value as written to /proc/sys and sysctl.d, after type and range checks."""
    if isinstance(value, bool) or value is None or isinstance(value, (float, list, dict)):
        raise SysctlError("settings: %s has value %r of type %s; allowed: an integer or a string"
                          % (key, value, type(value).__name__))
    text = str(value).strip()
    if not text or not SAFE_VALUE_RE.match(text):
        raise SysctlError("settings: %s has value %r; allowed: printable characters on one line, not empty"
                          % (key, value))
    wants_int = (spec is not None and spec["type"] == "int") or (
        live_value is not None and INT_RE.match(live_value.strip()) is not None)
    if wants_int:
        if not INT_RE.match(text):
            raise SysctlError("settings: %s must be an integer, got %r" % (key, value))
        number = int(text)
        low = spec["min"] if spec else -(2 ** 63)
        high = spec["max"] if spec else 2 ** 64 - 1
        if number < low or number > high:
            raise SysctlError("settings: %s = %d is out of range; allowed: %d to %d" % (key, number, low, high))
        text = str(number)
    return " ".join(text.split())


def validate_file(path):
    if not isinstance(path, str) or not os.path.isabs(path):
        raise SysctlError("file: %r must be an absolute path in one of %s" % (path, ", ".join(SYSCTL_DIRS)))
    if os.path.normpath(path) != path or os.path.dirname(path) not in SYSCTL_DIRS:
        raise SysctlError("file: %r must be directly inside one of %s" % (path, ", ".join(SYSCTL_DIRS)))
    if not FILE_NAME_RE.match(os.path.basename(path)):
        raise SysctlError("file: %r must be named like 90-kubescale-arp.conf (letters, digits, '_', '-', '.', "
                          "ending in .conf)" % path)


def validate_rules(rules):
    out = []
    for i, rule in enumerate(rules or []):
        where = "rules[%d]" % i
        if not isinstance(rule, dict):
            raise SysctlError("%s: must be a dict with keys and relation" % where)
        unknown = set(rule) - {"keys", "relation", "name"}
        if unknown:
            raise SysctlError("%s: unknown option(s) %s; allowed: keys, relation, name"
                              % (where, ", ".join(sorted(unknown))))
        keys = rule.get("keys")
        if not isinstance(keys, list) or len(keys) < 2:
            raise SysctlError("%s.keys: must list at least two sysctl keys" % where)
        relation = rule.get("relation", "<=")
        if relation not in RELATIONS:
            raise SysctlError("%s.relation: %r is not one of %s" % (where, relation, ", ".join(RELATIONS)))
        norm = [normalize_key(k) for k in keys]
        out.append({"name": rule.get("name") or (" %s " % relation).join(norm), "keys": norm,
                    "relation": relation})
    return out


def parse_conf(text):
    """(key, value) assignments of a sysctl.d file, in order, keys normalized as systemd does."""
    entries = []
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line[0] in "#;" or "=" not in line:
            continue
        key, value = line.split("=", 1)
        key = key.strip().lstrip("-")
        first_slash, first_dot = key.find("/"), key.find(".")
        if first_slash != -1 and (first_dot == -1 or first_slash < first_dot):
            key = key.replace("/", "\0").replace(".", "/").replace("\0", ".")
        entries.append((key, " ".join(value.split())))
    return entries


def render_conf(values):
    lines = ["# Managed by kubescale.tuning.sysctl_profile: changes here are overwritten."]
    lines += ["%s = %s" % (k, values[k]) for k in sorted(values)]
    return "\n".join(lines) + "\n"


def _as_int(value):
    if value is not None and INT_RE.match(str(value)):
        return int(value)
    return None


def rule_violations(values, rules):
    """[(rule, key_a, key_b)] for each adjacent pair that is known and breaks its rule."""
    out = []
    for rule in rules:
        test = RELATIONS[rule["relation"]]
        for a, b in zip(rule["keys"], rule["keys"][1:]):
            va, vb = _as_int(values.get(a)), _as_int(values.get(b))
            if va is not None and vb is not None and not test(va, vb):
                out.append((rule, a, b))
    return out


def plan_order(current, targets, rules):
    """An order for the live writes in which no step breaks a rule that held before it.

    Raising thresholds goes 3 -> 2 -> 1, lowering 1 -> 2 -> 3; mixed moves are found greedily.
    """
    state = dict(current)
    pending = sorted(targets)
    order = []
    budget = len(rule_violations(state, rules))
    while pending:
        for key in pending:
            trial = dict(state)
            trial[key] = targets[key]
            if len(rule_violations(trial, rules)) <= budget:
                break
        else:
            raise SysctlError("no order of live writes keeps every rule true for %s" % ", ".join(pending))
        state[key] = targets[key]
        budget = len(rule_violations(state, rules))
        pending.remove(key)
        order.append(key)
    return order


# --------------------------------------------------------------------------- the host

class Host:
    """The parts of a machine sysctl_profile reads and writes, below `root` ("/" for real)."""

    def __init__(self, root="/"):
        self.root = root

    def path(self, absolute):
        return os.path.join(self.root, absolute.lstrip("/"))

    def proc_path(self, key):
        return self.path("/proc/sys/" + key.replace(".", "/"))

    def read_live(self, key):
        try:
            with open(self.proc_path(key)) as f:
                return " ".join(f.read().split())
        except (IOError, OSError):
            return None

    def live_status(self, key):
        """'ok', or why the key cannot be set live here."""
        path = self.proc_path(key)
        if not os.path.exists(path):
            return "absent from this network namespace" if key.startswith("net.") else "absent from /proc/sys"
        if not os.access(path, os.W_OK):
            return "/proc/sys is read-only here"
        return "ok"

    def write_live(self, key, value):
        with open(self.proc_path(key), "w") as f:
            f.write(value + "\n")

    def read(self, absolute):
        return read_text(self.path(absolute))

    def config_files(self, overrides=None):
        """Files systemd-sysctl reads, in the order it applies them: [(name, absolute path, text)].

        `overrides` maps an absolute path to the text it will have (None: removed).
        """
        overrides = overrides or {}
        chosen = {}
        for directory in SYSCTL_DIRS:
            names = set()
            real_dir = self.path(directory)
            if os.path.isdir(real_dir):
                names.update(n for n in os.listdir(real_dir) if n.endswith(".conf"))
            names.update(os.path.basename(p) for p, t in overrides.items()
                         if os.path.dirname(p) == directory and t is not None)
            for name in names:
                absolute = os.path.join(directory, name)
                if absolute in overrides and overrides[absolute] is None:
                    continue
                chosen.setdefault(name, absolute)  # same name higher up masks this one
        out = []
        for name in sorted(chosen):
            absolute = chosen[name]
            if absolute in overrides:
                text = overrides[absolute]
            else:
                real = self.path(absolute)
                if os.path.realpath(real) == "/dev/null":
                    continue  # masked
                try:
                    text = read_text(real)
                except (IOError, OSError):
                    text = None
            out.append((name, absolute, text or ""))
        return out

    def boot_values(self, overrides=None):
        """key -> (value, winning file) as systemd-sysctl would leave them at boot."""
        return boot_values_of(self.config_files(overrides))


def boot_values_of(files):
    """key -> (value, winning file) for files in systemd-sysctl order, as config_files returns them."""
    result = {}
    for _name, absolute, text in files:
        for key, value in parse_conf(text):
            result[key] = (value, absolute)
    return result


def boot_lookup(boot, key):
    """The boot value for `key`, honouring glob keys (net.ipv4.conf.*.rp_filter) as systemd does."""
    if key in boot:
        return boot[key]
    hit = None
    for pattern, entry in boot.items():
        if "*" in pattern and fnmatch.fnmatchcase(key, pattern):
            hit = entry
    return hit


# --------------------------------------------------------------------------- the whole run

def observe_profile(host, settings, path):
    """Read only: per key the wanted, live, persisted (in `path`) and boot values and the file that wins at boot.

    For audits: never writes, and reports an overriding file instead of failing on it. Raises SysctlError only for
    settings or a file name that apply_profile would refuse too.
    """
    if not isinstance(settings, dict) or not settings:
        raise SysctlError("settings: must be a non-empty dict of sysctl key -> value")
    validate_file(path)
    text = host.read(path)
    persisted = dict(parse_conf(text)) if text is not None else {}
    boot = host.boot_values()
    keys = {}
    for raw in settings:
        key = normalize_key(raw)
        live, status = host.read_live(key), host.live_status(key)
        wanted = normalize_value(key, settings[raw], CATALOGUE.get(key), live)
        at_boot = boot_lookup(boot, key)
        keys[key] = {
            "wanted": wanted,
            "live": live,
            "live_status": status,
            "persisted": persisted.get(key),
            "boot": at_boot[0] if at_boot else None,
            "winning_file": at_boot[1] if at_boot else None,
        }
    return {"keys": keys, "file": path, "file_present": text is not None}


@dataclass
class KeyPlan:
    """One key of a profile: its live value now and after, what the file persists, and why it is not set live."""

    before: Optional[str]
    after: Optional[str]
    persisted: Optional[str]
    winning_file: Optional[str]
    drift: Optional[bool]
    live_applied: bool
    live_skipped: Optional[str]


@dataclass
class ProfilePlan:
    """What apply_profile changes, decided before anything is written: the file's old and new text, the live values
    to write (`targets`) in an order that keeps every rule true (`order`), and their values now (`live`)."""

    path: str
    old_text: Optional[str]
    new_text: Optional[str]
    live: Dict[str, Optional[str]]
    targets: Dict[str, str]
    order: List[str]
    skipped: Dict[str, str]
    keys: Dict[str, KeyPlan]

    @property
    def file_changed(self) -> bool:
        return self.new_text != self.old_text

    @property
    def changed(self) -> bool:
        return bool(self.order) or self.file_changed

    def result(self) -> dict:
        return {
            "keys": dict((k, asdict(v)) for k, v in self.keys.items()),
            "file": self.path,
            "file_changed": self.file_changed,
            "live_order": list(self.order),
            "persist_only": sorted(self.skipped),
        }

    def diff(self) -> List[dict]:
        out = [{"before_header": self.path, "after_header": self.path,
                "before": self.old_text or "", "after": self.new_text or ""}]
        if self.order:
            out.append({
                "before_header": "live (/proc/sys)", "after_header": "live (/proc/sys)",
                "before": "".join("%s = %s\n" % (k, self.live[k]) for k in self.order),
                "after": "".join("%s = %s\n" % (k, self.targets[k]) for k in self.order),
            })
        return out


class Outcome(NamedTuple):
    """apply_profile's answer."""

    changed: bool
    result: dict
    diff: List[dict]


def _settings_keys(settings) -> Dict[str, str]:
    """key (dotted) -> the name the caller gave it; two names of one key are refused."""
    keys = {}
    for raw in settings:
        key = normalize_key(raw)
        if key in keys:
            raise SysctlError("settings: %r and %r name the same key %s" % (keys[key], raw, key))
        keys[key] = raw
    return keys


def _check_boot(path, values, files_after, boot_after, live, rule_keys, all_rules):
    """Refuse a file that would not win at boot, or values a rule forbids once applied."""
    if not any(a == path for _n, a, _t in files_after):
        raise SysctlError("file: %s is masked by a file of the same name in a higher-priority directory "
                          "(%s)" % (path, ", ".join(SYSCTL_DIRS)))
    for key in sorted(values):
        win = boot_lookup(boot_after, key)
        if win and win[1] != path and win[0] != values[key]:
            raise SysctlError(
                "settings: %s = %s would be overridden at boot by %s (sets %s, read after %s in "
                "systemd-sysctl order); remove it there or give file a name that sorts later"
                % (key, values[key], win[1], win[0], path))
    effective = {}
    for key in rule_keys:
        if key in values:
            effective[key] = values[key]
        elif live.get(key) is not None:
            effective[key] = live[key]
        else:
            at_boot = boot_lookup(boot_after, key)
            if at_boot:
                effective[key] = at_boot[0]
    broken = rule_violations(effective, all_rules)
    if broken:
        rule, a, b = broken[0]
        raise SysctlError("settings: %s = %s breaks rule '%s': it must be %s %s = %s"
                          % (a, effective[a], rule["name"], rule["relation"], b, effective[b]))


def plan_profile(host: Host, settings: dict, path: str, apply: str = "auto", rules: Optional[list] = None,
                 state: str = "present") -> ProfilePlan:
    """Validate every input and decide every change, reading the host only. Raises SysctlError."""
    if apply not in ("auto", "live", "persist"):
        raise SysctlError("apply: %r is not one of auto, live, persist" % (apply,))
    if state not in ("present", "absent"):
        raise SysctlError("state: %r is not one of present, absent" % (state,))
    if not isinstance(settings, dict) or not settings:
        raise SysctlError("settings: must be a non-empty dict of sysctl key -> value")
    validate_file(path)
    all_rules = BUILTIN_RULES + validate_rules(rules)
    keys = _settings_keys(settings)
    rule_keys = set(k for r in all_rules for k in r["keys"])
    live = dict((k, host.read_live(k)) for k in set(keys) | rule_keys)
    status = dict((k, host.live_status(k)) for k in keys)

    values = {}
    for key, raw in keys.items():
        spec = CATALOGUE.get(key)
        if spec is None and status[key].startswith("absent"):
            raise SysctlError("settings: unknown key %s: not in /proc/sys here and not one this module knows "
                              "(%s)" % (key, ", ".join(sorted(CATALOGUE))))
        if state == "present":
            values[key] = normalize_value(key, settings[raw], spec, live.get(key))

    old_text = host.read(path)
    old_entries = dict(parse_conf(old_text)) if old_text is not None else {}
    if state == "present":
        new_map = dict(values)
    else:
        new_map = dict((k, v) for k, v in old_entries.items() if k not in keys)
    new_text = render_conf(new_map) if new_map else None
    if state == "absent" and old_text is not None and not any(k in old_entries for k in keys):
        new_text = old_text  # nothing of ours to remove: leave the file as it is

    boot_before = host.boot_values()
    files_after = host.config_files({path: new_text})
    boot_after = boot_values_of(files_after)
    if state == "present":
        _check_boot(path, values, files_after, boot_after, live, rule_keys, all_rules)

    targets, skipped = {}, {}
    for key in sorted(values):
        if apply == "persist":
            skipped[key] = "apply=persist"
        elif status[key] != "ok":
            if apply == "live":
                raise SysctlError("settings: %s cannot be set live (apply=live): %s; use apply=auto or persist"
                                  % (key, status[key]))
            skipped[key] = status[key]
        elif live[key] != values[key]:
            targets[key] = values[key]
    order = plan_order(dict((k, v) for k, v in live.items() if v is not None), targets, all_rules)

    planned = {}
    for key in sorted(keys):
        before_boot = boot_lookup(boot_before, key)
        after_boot = boot_lookup(boot_after, key)
        planned[key] = KeyPlan(
            before=live.get(key),
            after=targets.get(key, live.get(key)),
            persisted=new_map.get(key),
            winning_file=after_boot[1] if after_boot else None,
            drift=(live[key] != before_boot[0]) if (live.get(key) is not None and before_boot) else None,
            live_applied=key in targets,
            live_skipped=skipped.get(key),
        )
    return ProfilePlan(path=path, old_text=old_text, new_text=new_text, live=live, targets=targets, order=order,
                       skipped=skipped, keys=planned)


def write_profile(host: Host, plan: ProfilePlan) -> None:
    """Write a plan: the live values in its order, each read back, then the file. On any failure the live values
    written so far are put back (in reverse order, which keeps the rules true) and the file is left as it was."""
    written = []
    try:
        for key in plan.order:
            host.write_live(key, plan.targets[key])
            written.append(key)
            readback = host.read_live(key)
            if readback != plan.targets[key]:
                raise SysctlError("settings: %s was written as %s but reads back %s"
                                  % (key, plan.targets[key], readback))
        if plan.file_changed:
            if plan.new_text is None:
                remove_file(host.path(plan.path))
            else:
                directory = host.path(os.path.dirname(plan.path))
                if not os.path.isdir(directory):
                    os.makedirs(directory, 0o755)
                atomic_write(host.path(plan.path), plan.new_text)
    except (SysctlError, IOError, OSError) as exc:
        restored, stuck = [], []
        for key in reversed(written):
            try:
                host.write_live(key, plan.live[key])
                restored.append(key)
            except (IOError, OSError):
                stuck.append(key)
        raise SysctlError("%s; rolled back live values of %s%s; %s left unchanged"
                          % (exc, ", ".join(restored) or "nothing",
                             " (could NOT restore %s)" % ", ".join(stuck) if stuck else "", plan.path)) from exc


def apply_profile(host: Host, settings: dict, path: str, apply: str = "auto", rules: Optional[list] = None,
                  state: str = "present", check_mode: bool = False) -> Outcome:
    """Plan, then (unless check_mode) write. Raises SysctlError, with nothing changed, for any bad input."""
    plan = plan_profile(host, settings, path, apply, rules, state)
    if not check_mode:
        write_profile(host, plan)
    return Outcome(plan.changed, plan.result(), plan.diff())
