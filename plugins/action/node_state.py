# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action for kubescale.tuning.node_state: a whole file's text crosses the wire only when the node needs it.

A `files` entry with `src` (a file on the controller, found like copy's src: absolute, or in the role's files/) is
read here and sent to the node as its sha256 alone. The module compares it with the node's file and, when any such
file differs, changes nothing and names them (`content_needed`); this action then runs the module once more with
their text. So a re-converge of unchanged nodes sends hashes, not the scripts and sidecars a role installs (tens of
kilobytes per node per run, at 2,500 nodes a few hundred megabytes through one controller), and pays no second run;
a node that needs a file pays one more module run. Check and diff mode behave as the module's: the second run is
the module's own check (or diff) of the full content.

`checks` (rules as check_vars evaluates them, plugin_utils/_rules.py) are checked here first, on the controller: a role whose
first change is this call checks its variables in the same task.
"""

from __future__ import annotations

import hashlib
import os

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.kubescale.tuning.plugins.plugin_utils._rules import RulesAction

MODULE = "kubescale.tuning.node_state"
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


class ActionModule(RulesAction):
    """Check the rules; send controller files by hash; send the text of only those the node lacks."""

    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        if not self.check_rules(result):
            return result
        args = self.module_args()
        files = args.get("files") or []
        if not isinstance(files, list):
            raise AnsibleActionFail("files: give a list of {path, content or src} entries")
        texts = {}
        sent = []
        for i, entry in enumerate(files):
            if not isinstance(entry, dict) or entry.get("src") is None:
                sent.append(entry)
                continue
            if entry.get("content") is not None:
                raise AnsibleActionFail("files[%d]: content and src are mutually exclusive" % i)
            try:
                path = self._find_needle("files", to_text(entry["src"]))
            except AnsibleError as exc:
                raise AnsibleActionFail("files[%d].src: %s" % (i, exc)) from exc
            texts[i], digest = read_src(path)
            hashed = {k: v for k, v in entry.items() if k != "src"}
            hashed["sha256"] = digest
            sent.append(hashed)
        args["files"] = sent
        if "files" not in self._task.args:
            del args["files"]
        out = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
        needed = out.pop("content_needed", None) or []
        if needed:
            for i in needed:
                if i not in texts:
                    raise AnsibleActionFail("the module asked for the text of files[%s], which was given inline" % i)
                full = {k: v for k, v in sent[i].items() if k != "sha256"}
                full["content"] = texts[i]
                sent[i] = full
            out = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
            if out.get("content_needed"):
                out.update(failed=True, msg="files %s changed on the node between two runs of the module; run again"
                           % ", ".join(str(sent[i]["path"]) for i in out.pop("content_needed")))
        out["content_sent"] = [str(files[i]["path"]) for i in needed]
        return self.merge(result, out)
