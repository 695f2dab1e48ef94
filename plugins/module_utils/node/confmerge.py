# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: merge settings into a JSON, YAML, TOML or environment file as data.

The file is parsed, the settings are merged into the data (mappings recursively, everything else
replaced, None removes a key), and the file is rewritten only when the data changed. Keys the settings do
not name are kept. The caller learns which key paths changed, so it can decide between reloading and
restarting a daemon.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import re
import shlex

from ansible_collections.kubescale.tuning.plugins.module_utils.node import toml as _toml

FORMATS = ("json", "yaml", "toml", "env")


class ConfError(ValueError):
    """A file or a setting that cannot be merged; the message says which."""


def _yaml():
    try:
        import yaml
    except ImportError:
        raise ConfError("format yaml needs PyYAML on the node (Debian/Ubuntu package python3-yaml)") from None
    return yaml


def parse(fmt, text, path="the file"):
    """The data in `text` (a dict); an empty or missing file is {}."""
    if text is None or not text.strip():
        return {}
    try:
        if fmt == "json":
            data = json.loads(text)
        elif fmt == "yaml":
            yaml = _yaml()
            data = yaml.safe_load(text)
            if data is None:
                data = {}
        elif fmt == "toml":
            data = _toml.loads(text)
        else:
            data = parse_env(text)
    except ConfError:
        raise
    except Exception as exc:  # the parsers' own error types differ
        raise ConfError("%s is not valid %s: %s" % (path, fmt.upper(), exc)) from exc
    if not isinstance(data, dict):
        raise ConfError("%s must hold a %s mapping at the top, not %s" % (path, fmt.upper(), type(data).__name__))
    return data


def render(fmt, data):
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    if fmt == "yaml":
        return _yaml().safe_dump(data, default_flow_style=False, sort_keys=False)
    if fmt == "toml":
        return _toml.dumps(data)
    return render_env(data)


# --- environment files (KEY="value" lines, as systemd's EnvironmentFile= and /etc/default read them) --

_ENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def parse_env(text):
    data = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _ENV_LINE.match(line)
        if not m:
            raise ValueError("line %d is not NAME=value" % n)
        words = shlex.split(m.group(2), comments=False, posix=True)
        data[m.group(1)] = " ".join(words) if len(words) != 1 else words[0]
    return data


def render_env(data):
    lines = []
    for k, v in data.items():
        if isinstance(v, dict):
            v = flags_to_text(v)
        lines.append('%s="%s"' % (k, str(v).replace("\\", "\\\\").replace('"', '\\"')))
    return "\n".join(lines) + "\n"


def flags_from_text(text):
    """Ordered {--flag: value} from a command-line string (`--a=1 --b 2 --c` → value None for --c)."""
    words = shlex.split(text or "")
    flags = {}
    i = 0
    while i < len(words):
        w = words[i]
        if not w.startswith("-"):
            raise ValueError("%r is not a --flag" % w)
        if "=" in w:
            k, v = w.split("=", 1)
        elif i + 1 < len(words) and not words[i + 1].startswith("-"):
            k, v = w, words[i + 1]
            i += 1
        else:
            k, v = w, None
        flags[k] = v
        i += 1
    return flags


def flags_to_text(flags):
    return " ".join(k if v is None else "%s=%s" % (k, shlex.quote(str(v))) for k, v in flags.items())


def _env_flags_merge(before, settings):
    """Env files: a dict setting merges --flags into the variable's command line."""
    data = copy.deepcopy(before)
    for k, v in settings.items():
        if isinstance(v, dict):
            try:
                flags = flags_from_text(data.get(k, ""))
            except ValueError as exc:
                raise ConfError("%s holds something other than --flags: %s" % (k, exc)) from exc
            for fk, fv in v.items():
                if not fk.startswith("--"):
                    raise ConfError("flag %r under %s must start with --" % (fk, k))
                if fv is None:
                    flags.pop(fk, None)
                else:
                    flags[fk] = _flag_text(fv)
            data[k] = flags_to_text(flags)
        elif v is None:
            data.pop(k, None)
        else:
            data[k] = str(v)
    return data


def _flag_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


# --- merging --------------------------------------------------------------------------------------------

def deep_merge(before, settings):
    """A new dict: `before` with `settings` merged in (dicts recursively, None deletes, rest replaces)."""
    out = copy.deepcopy(before)
    for k, v in settings.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        elif isinstance(v, dict):
            out[k] = deep_merge({}, v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def changed_paths(before, after, prefix=()):
    """Key paths (tuples) whose value differs between two dicts, to the deepest mapping level."""
    paths = []
    for k in list(before) + [k for k in after if k not in before]:
        b, a = before.get(k, _MISSING), after.get(k, _MISSING)
        if isinstance(b, dict) and isinstance(a, dict):
            paths.extend(changed_paths(b, a, prefix + (k,)))
        elif b != a or type(b) is not type(a):
            paths.append(prefix + (k,))
    return paths


class _Missing(object):
    def __repr__(self):
        return "<missing>"


_MISSING = _Missing()


def merge(fmt, text, settings, path="the file"):
    """(before_data, after_data, new_text or None when unchanged, changed key paths)."""
    if fmt not in FORMATS:
        raise ConfError("format must be one of %s, not %r" % (", ".join(FORMATS), fmt))
    before = parse(fmt, text, path)
    after = _env_flags_merge(before, settings) if fmt == "env" else deep_merge(before, settings)
    paths = changed_paths(before, after)
    if not paths:
        return before, after, None, []
    new_text = render(fmt, after)
    # What is written must read back as what was meant.
    if parse(fmt, new_text, path) != after:
        raise ConfError("%s: the merged %s would not read back as written" % (path, fmt.upper()))
    return before, after, new_text, paths
