# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: TOML read and write with the standard library.

`loads` uses tomllib (Python 3.11+) or tomli when present, else a small parser of TOML 1.0 good for
configuration files such as containerd's (tables, arrays of tables, dotted and quoted keys, every string
form, integers, floats, booleans, arrays, inline tables; dates are kept as their text). `dumps` writes
data back as tables, the way `containerd config default` lays its file out (without comments).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import math
import re

try:
    import tomllib as _tomllib
except ImportError:  # Python < 3.11
    try:
        import tomli as _tomllib
    except ImportError:
        _tomllib = None


class TomlError(ValueError):
    """The text is not valid TOML."""


def loads(text, force_fallback=False):
    if _tomllib is not None and not force_fallback:
        try:
            return _tomllib.loads(text)
        except _tomllib.TOMLDecodeError as exc:
            raise TomlError(str(exc)) from exc
    return _Parser(text).parse()


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


# --- fallback parser ----------------------------------------------------------------------------------

_NUMBER = re.compile(
    r"[+-]?(?:0x[0-9A-Fa-f_]+|0o[0-7_]+|0b[01_]+|inf|nan|"
    r"(?:\d[\d_]*)(?:\.\d[\d_]*)?(?:[eE][+-]?\d[\d_]*)?)"
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?)?|\d{2}:\d{2}:\d{2}(?:\.\d+)?")
_BARE_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


class _Parser(object):
    def __init__(self, text):
        self.s = text.replace("\r\n", "\n")
        self.i = 0
        self.root = {}
        self.defined = set()

    def error(self, msg):
        line = self.s.count("\n", 0, self.i) + 1
        raise TomlError("%s (line %d)" % (msg, line))

    def peek(self, n=1):
        return self.s[self.i:self.i + n]

    def skip_ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def skip_comment(self):
        if self.peek() == "#":
            while self.i < len(self.s) and self.s[self.i] != "\n":
                self.i += 1

    def skip_ws_nl(self):
        while True:
            self.skip_ws()
            self.skip_comment()
            if self.peek() == "\n":
                self.i += 1
                continue
            return

    def end_of_line(self):
        self.skip_ws()
        self.skip_comment()
        if self.i < len(self.s):
            if self.peek() != "\n":
                self.error("expected the end of the line")
            self.i += 1

    def parse(self):
        current = self.root
        while True:
            self.skip_ws_nl()
            if self.i >= len(self.s):
                return self.root
            if self.peek(2) == "[[":
                self.i += 2
                path = self.key_path()
                self.skip_ws()
                if self.peek(2) != "]]":
                    self.error("expected ]]")
                self.i += 2
                parent = self.walk(self.root, path[:-1])
                arr = parent.setdefault(path[-1], [])
                if not isinstance(arr, list):
                    self.error("%s is not an array of tables" % ".".join(path))
                current = {}
                arr.append(current)
            elif self.peek() == "[":
                self.i += 1
                path = self.key_path()
                self.skip_ws()
                if self.peek() != "]":
                    self.error("expected ]")
                self.i += 1
                if tuple(path) in self.defined:
                    self.error("table %s defined twice" % ".".join(path))
                self.defined.add(tuple(path))
                current = self.walk(self.root, path)
            else:
                self.key_value(current)
            self.end_of_line()

    def walk(self, table, path):
        for p in path:
            nxt = table.setdefault(p, {})
            if isinstance(nxt, list):
                nxt = nxt[-1]
            if not isinstance(nxt, dict):
                self.error("key %s is not a table" % p)
            table = nxt
        return table

    def key_path(self):
        parts = []
        while True:
            self.skip_ws()
            parts.append(self.simple_key())
            self.skip_ws()
            if self.peek() == ".":
                self.i += 1
                continue
            return parts

    def simple_key(self):
        ch = self.peek()
        if ch == '"':
            return self.basic_string()
        if ch == "'":
            return self.literal_string()
        start = self.i
        while self.i < len(self.s) and self.s[self.i] in _BARE_CHARS:
            self.i += 1
        if start == self.i:
            self.error("expected a key")
        return self.s[start:self.i]

    def key_value(self, table):
        path = self.key_path()
        if self.peek() != "=":
            self.error("expected = after a key")
        self.i += 1
        self.skip_ws()
        value = self.value()
        target = self.walk(table, path[:-1])
        if path[-1] in target:
            self.error("key %s defined twice" % ".".join(path))
        target[path[-1]] = value

    def value(self):
        s = self.s
        if s.startswith('"""', self.i):
            return self.ml_basic_string()
        if s.startswith("'''", self.i):
            return self.ml_literal_string()
        ch = self.peek()
        if ch == '"':
            return self.basic_string()
        if ch == "'":
            return self.literal_string()
        if ch == "[":
            return self.array()
        if ch == "{":
            return self.inline_table()
        if s.startswith("true", self.i):
            self.i += 4
            return True
        if s.startswith("false", self.i):
            self.i += 5
            return False
        m = _DATE.match(s, self.i)
        if m:
            self.i = m.end()
            return m.group(0)
        m = _NUMBER.match(s, self.i)
        if m and m.end() > self.i:
            self.i = m.end()
            return self.number(m.group(0))
        self.error("expected a value")

    def number(self, text):
        t = text.replace("_", "")
        sign = -1 if t.startswith("-") else 1
        body = t.lstrip("+-")
        if body in ("inf", "nan"):
            return sign * float(body)
        for prefix, base in (("0x", 16), ("0o", 8), ("0b", 2)):
            if body.startswith(prefix):
                return sign * int(body[2:], base)
        if any(c in body for c in ".eE"):
            return sign * float(body)
        return sign * int(body)

    def escape(self):
        ch = self.peek()
        self.i += 1
        simple = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}
        if ch in simple:
            return simple[ch]
        if ch in ("u", "U"):
            n = 4 if ch == "u" else 8
            code = self.s[self.i:self.i + n]
            self.i += n
            try:
                return chr(int(code, 16))
            except ValueError:
                self.error("bad unicode escape")
        self.error("bad escape \\%s" % ch)

    def basic_string(self):
        self.i += 1
        out = []
        while True:
            if self.i >= len(self.s) or self.peek() == "\n":
                self.error("unterminated string")
            ch = self.s[self.i]
            self.i += 1
            if ch == '"':
                return "".join(out)
            if ch == "\\":
                out.append(self.escape())
            else:
                out.append(ch)

    def literal_string(self):
        self.i += 1
        end = self.s.find("'", self.i)
        nl = self.s.find("\n", self.i)
        if end < 0 or (0 <= nl < end):
            self.error("unterminated string")
        text = self.s[self.i:end]
        self.i = end + 1
        return text

    def ml_basic_string(self):
        self.i += 3
        if self.peek() == "\n":
            self.i += 1
        out = []
        while True:
            if self.i >= len(self.s):
                self.error("unterminated string")
            if self.s.startswith('"""', self.i):
                extra = 0
                while self.s.startswith('"', self.i + 3 + extra) and extra < 2:
                    extra += 1
                out.append('"' * extra)
                self.i += 3 + extra
                return "".join(out)
            ch = self.s[self.i]
            self.i += 1
            if ch == "\\":
                rest = re.match(r"[ \t]*\n[ \t\n]*", self.s[self.i:])
                if rest:
                    self.i += rest.end()
                else:
                    out.append(self.escape())
            else:
                out.append(ch)

    def ml_literal_string(self):
        self.i += 3
        if self.peek() == "\n":
            self.i += 1
        end = self.s.find("'''", self.i)
        if end < 0:
            self.error("unterminated string")
        while self.s.startswith("'", end + 3) and end + 3 - self.s.find("'''", self.i) < 5:
            end += 1
        text = self.s[self.i:end]
        self.i = end + 3
        return text

    def array(self):
        self.i += 1
        out = []
        while True:
            self.skip_ws_nl()
            if self.peek() == "]":
                self.i += 1
                return out
            out.append(self.value())
            self.skip_ws_nl()
            if self.peek() == ",":
                self.i += 1
            elif self.peek() != "]":
                self.error("expected , or ] in an array")

    def inline_table(self):
        self.i += 1
        table = {}
        self.skip_ws()
        if self.peek() == "}":
            self.i += 1
            return table
        while True:
            self.skip_ws()
            self.key_value(table)
            self.skip_ws()
            if self.peek() == ",":
                self.i += 1
            elif self.peek() == "}":
                self.i += 1
                return table
            else:
                self.error("expected , or } in an inline table")
