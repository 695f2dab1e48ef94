# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: a container runtime's image store (docker or containerd): what it holds, how to save, load and pin.

Commands run from argv lists, never a shell. Pipes between commands (a decompressor into ``docker load``) use
subprocess with argv lists because Ansible's run_command has no pipes and the archive must stream, never sit in
memory. Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import subprocess

from .files import ArchiveError
from .ref import normalize_ref

RUNTIMES = ("docker", "containerd")
PIN_LABEL = "io.cri-containerd.pinned"


class Runner(object):
    """Runs argv lists. `run(argv)` -> (rc, stdout, stderr); the module passes AnsibleModule.run_command."""

    def __init__(self, run=None):
        self._run = run

    def run(self, argv):
        if self._run is not None:
            return self._run(argv)
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = p.communicate()
        return p.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")

    @staticmethod
    def pipe(producer, consumer, stdin_path=None, stdout_file=None):
        """producer | consumer, streaming; either may be None (then the file is read or written directly).

        Returns (rc, stderr text) of the first command that failed, or (0, "").
        """
        procs = []
        with open(stdin_path, "rb") if stdin_path else open(os.devnull, "rb") as src:
            first = subprocess.Popen(producer, stdin=src, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            procs.append(first)
            second = subprocess.Popen(consumer, stdin=first.stdout, stdout=stdout_file or subprocess.PIPE,
                                      stderr=subprocess.PIPE)
            procs.append(second)
            first.stdout.close()
            out2, err2 = second.communicate()
            err1 = first.stderr.read()
            first.stderr.close()
            first.wait()
        for p, err in ((first, err1), (second, err2)):
            if p.returncode != 0:
                return p.returncode, "%s: %s" % (" ".join(p.args[:3]), err.decode("utf-8", "replace").strip())
        return 0, ""


def parse_size(text):
    """'1.9 MiB' / '300MB' / '12kB' -> bytes (approximate, for free-space estimates)."""
    m = re.match(r"^\s*([0-9.]+)\s*([kKMGT]?i?B)?\s*$", text)
    if not m:
        return 0
    unit = (m.group(2) or "B").replace("i", "").upper()
    return int(float(m.group(1)) * {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}[unit])


class Store(object):
    """One runtime's image store: what it holds, and how to save, load and pin."""

    def __init__(self, runner, runtime, namespace="k8s.io"):
        self.runner = runner
        self.runtime = runtime
        self.namespace = namespace

    def _ctr(self, *args):
        return ["ctr", "--namespace", self.namespace] + list(args)

    def _check(self, argv):
        rc, out, err = self.runner.run(argv)
        if rc != 0:
            raise ArchiveError("%s failed (rc=%d): %s" % (" ".join(argv[:4]), rc, (err or out).strip()))
        return out

    def images(self):
        """{normalized ref: {"id", "manifest", "labels", "size"}} of every tagged image."""
        found = {}
        if self.runtime == "docker":
            out = self._check(["docker", "images", "--no-trunc", "--format", "{{.Repository}}:{{.Tag}} {{.ID}} {{.Size}}"])
            for line in out.splitlines():
                parts = line.split(None, 2)
                if len(parts) < 2 or "<none>" in parts[0]:
                    continue
                try:
                    ref = normalize_ref(parts[0])
                except ValueError:
                    continue
                found[ref] = {"id": parts[1], "manifest": None, "labels": {},
                              "size": parse_size(parts[2]) if len(parts) > 2 else 0}
            return found
        out = self._check(self._ctr("images", "ls"))
        for line in out.splitlines()[1:]:
            parts = line.split()
            if len(parts) < 6 or parts[0].startswith("sha256:"):
                continue
            try:
                ref = normalize_ref(parts[0])
            except ValueError:
                continue
            labels = {}
            if parts[-1] != "-":
                for item in parts[-1].split(","):
                    k, _sep, v = item.partition("=")
                    labels[k] = v
            found[ref] = {"id": None, "manifest": parts[2], "labels": labels, "size": parse_size(" ".join(parts[3:5]))}
        return found

    def config_digest(self, manifest_digest):
        """The config digest of a containerd image whose target is `manifest_digest` (one ctr call)."""
        out = self._check(self._ctr("content", "get", manifest_digest))
        try:
            return json.loads(out)["config"]["digest"]
        except (ValueError, KeyError, TypeError):
            return None

    def root(self, default_root):
        if self.runtime == "docker":
            return self._check(["docker", "info", "--format", "{{.DockerRootDir}}"]).strip() or default_root
        return default_root

    def export_argv(self, refs, dest):
        if self.runtime == "docker":
            return ["docker", "save", "--output", dest] + list(refs)
        return self._ctr("images", "export", dest) + list(refs)

    def load_argv(self, path=None):
        if self.runtime == "docker":
            return ["docker", "load"] + (["--input", path] if path else [])
        return self._ctr("images", "import", path or "-")

    def pin(self, ref):
        self._check(self._ctr("images", "label", ref, "%s=pinned" % PIN_LABEL))


def present(store, wanted, have, pin=False):
    """Split the archive's images into (missing, unpinned) against the store's `have`."""
    missing = []
    unpinned = []
    for image in wanted:
        ref = image["ref"]
        cur = have.get(ref)
        ok = False
        if cur is not None:
            if store.runtime == "docker":
                ok = image.get("id") is not None and cur["id"] == image["id"]
            elif image.get("manifest"):
                ok = cur["manifest"] == image["manifest"]
            elif image.get("id"):
                ok = store.config_digest(cur["manifest"]) == image["id"]
        if not ok:
            missing.append(ref)
        elif pin and store.runtime == "containerd" and cur["labels"].get(PIN_LABEL) != "pinned":
            unpinned.append(ref)
    return missing, unpinned
