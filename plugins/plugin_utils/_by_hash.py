# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A whole file's text crosses the wire only when the node needs it (node_state's files, and the nested node_state
option of the modules that finish a tuning in their own call).

A `files` entry with `src` (a file on the controller, found like copy's src: absolute, or in the role's files/) is
read here and sent to the node as its sha256 alone. The module compares it with the node's file and, when any such
file differs, changes nothing and names them (`content_needed`); the module is then run once more with their text.
So a re-converge of unchanged nodes sends hashes, not the scripts and sidecars a role installs (tens of kilobytes per
node per run, at 2,500 nodes a few hundred megabytes through one controller), and pays no second run; a node that
needs a file pays one more module run. Check and diff mode behave as the module's: the second run is the module's
own check (or diff) of the full content.
"""

from __future__ import annotations

import copy
import hashlib
import os

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

# A forked worker runs one task on one host; the cache spares re-reading and re-hashing a src within a worker.
_CACHE: dict = {}


def read_src(path):
    """(text, sha256) of a controller file, cached by path, size and mtime."""
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns)
    if key not in _CACHE:
        with open(path, "rb") as fh:
            data = fh.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise AnsibleActionFail("%s is not UTF-8 text: %s" % (path, exc)) from exc
        _CACHE[key] = (text, hashlib.sha256(data).hexdigest())
    return _CACHE[key]


def run_by_hash(action, module_name, args, files_at, task_vars):
    """Run `module_name` with `args`, the `src` entries of the files list at `files_at` (keys into args, like
    ("files",) or ("node_state", "files")) sent as their sha256; once more with the text of those the module names
    in content_needed. The module's result, with content_sent (the paths whose text was sent)."""
    args = copy.deepcopy(args)
    holder = args
    for key in files_at[:-1]:
        holder = holder.get(key) if isinstance(holder, dict) else None
    where = ".".join(files_at)
    files = holder.get(files_at[-1]) if isinstance(holder, dict) else None
    if files is None:
        files = []
    if not isinstance(files, list):
        raise AnsibleActionFail("%s: give a list of {path, content or src} entries" % where)
    texts = {}
    sent = []
    for i, entry in enumerate(files):
        if not isinstance(entry, dict) or entry.get("src") is None:
            sent.append(entry)
            continue
        if entry.get("content") is not None:
            raise AnsibleActionFail("%s[%d]: content and src are mutually exclusive" % (where, i))
        try:
            path = action._find_needle("files", to_text(entry["src"]))
        except AnsibleError as exc:
            raise AnsibleActionFail("%s[%d].src: %s" % (where, i, exc)) from exc
        texts[i], digest = read_src(path)
        hashed = {k: v for k, v in entry.items() if k != "src"}
        hashed["sha256"] = digest
        sent.append(hashed)
    if files:
        holder[files_at[-1]] = sent
    out = action._execute_module(module_name=module_name, module_args=args, task_vars=task_vars)
    needed = out.pop("content_needed", None) or []
    if needed:
        for i in needed:
            if i not in texts:
                raise AnsibleActionFail("the module asked for the text of %s[%s], which was given inline" % (where, i))
            full = {k: v for k, v in sent[i].items() if k != "sha256"}
            full["content"] = texts[i]
            sent[i] = full
        out = action._execute_module(module_name=module_name, module_args=args, task_vars=task_vars)
        if out.get("content_needed"):
            out.update(failed=True, msg="%s %s changed on the node between two runs of the module; run again"
                       % (where, ", ".join(str(sent[i]["path"]) for i in out.pop("content_needed"))))
    out["content_sent"] = [str(files[i]["path"]) for i in needed]
    return out


class ByHashAction(ActionBase):
    """The action of a module with a nested node_state option and no `checks`: the module, its node_state's files
    sent by hash (FILES_AT)."""

    MODULE = ""
    TRANSFERS_FILES = False
    FILES_AT = ("node_state", "files")

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        result.update(run_by_hash(self, self.MODULE, dict(self._task.args), self.FILES_AT, task_vars))
        return result
