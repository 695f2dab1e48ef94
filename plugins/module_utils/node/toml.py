# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: TOML read and write.

`loads` is the standard library's tomllib (Python 3.11+), and on older Pythons tomli, the same parser before it
joined the standard library, vendored in `_vendor/tomli` (MIT; see its README): no TOML reader of our own.
`dumps` writes data back as tables, the way `containerd config default` lays its file out (without comments).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import math
import re

try:
    import tomllib as _parser
except ImportError:  # Python < 3.11
    from ansible_collections.kubescale.tuning.plugins.module_utils._vendor.tomli import _parser


class TomlError(ValueError):
    """The text is not valid TOML."""


def loads(text):
    try:
        return _parser.loads(text)
    except _parser.TOMLDecodeError as exc:
        raise TomlError(str(exc)) from exc


# --- writer -----------------------------------------------------------------------------------------

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _key(k):
    return k if _BARE.match(k) else _string(k)


def _string(s):
    out = []
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join("%s = %s" % (_key(k), _value(x)) for k, x in v.items()) + "}"
    raise TypeError("cannot write %r as TOML" % (v,))


def _is_table_array(v):
    return isinstance(v, (list, tuple)) and len(v) > 0 and all(isinstance(x, dict) for x in v)


def dumps(data):
    """TOML text for `data` (a dict); keys keep their order."""
    lines = []
    _emit_table(lines, [], data, header=False, depth=0)
    return "\n".join(lines).lstrip("\n") + "\n"


def _emit_table(lines, path, table, header, depth, array=False):
    indent = "  " * max(depth - 1, 0)
    scalars = [(k, v) for k, v in table.items() if not isinstance(v, dict) and not _is_table_array(v)]
    children = [(k, v) for k, v in table.items() if isinstance(v, dict) or _is_table_array(v)]
    if header and (scalars or not children or array):
        lines.append("")
        name = ".".join(_key(p) for p in path)
        lines.append(indent + ("[[%s]]" % name if array else "[%s]" % name))
    for k, v in scalars:
        lines.append("%s%s = %s" % (indent + ("  " if header else ""), _key(k), _value(v)))
    for k, v in children:
        if isinstance(v, dict):
            _emit_table(lines, path + [k], v, header=True, depth=depth + 1)
        else:
            for item in v:
                _emit_table(lines, path + [k], item, header=True, depth=depth + 1, array=True)
