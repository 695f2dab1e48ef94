# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: the image archive's two transactions - save (export, re-pack with the index first, compress, rename, then
the sidecar) and load (plan from the index, verify the whole digest, check space, load, prove every image there).

Standard library only: the boot-time loader (images.boot) runs `ensure_loaded` on nodes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess

from .compression import compress_argv, decompress_argv, detect_compression
from .files import ArchiveError, free_bytes, fsync_dir, sha256_file, tmp_name
from .index import FORMAT, read_index, repack
from .ref import parse_sha256
from .sidecar import read_sidecar, sidecar_path
from .store import Runner, present


def save(store, refs, path, compression, level):
    """Export `refs` into one archive at `path` (atomic), then its sidecar. Returns the sidecar doc."""
    directory = os.path.dirname(path)
    base = os.path.basename(path)
    raw = tmp_name(directory, base, ".export.tar")
    tmp = tmp_name(directory, base, ".part")
    try:
        rc, out, err = store.runner.run(store.export_argv(refs, raw))
        if rc != 0:
            raise ArchiveError("%s failed (rc=%d): %s" % (" ".join(store.export_argv(refs, raw)[:3]), rc, (err or out).strip()))
        export_bytes = os.path.getsize(raw)
        if free_bytes(directory) < export_bytes:
            raise ArchiveError("%s: %d bytes free, the archive may need up to %d" % (directory, free_bytes(directory), export_bytes))
        argv = compress_argv(compression, level)
        with open(tmp, "wb") as f:
            if argv is None:
                doc = repack(raw, f, store.runtime)
            else:
                proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=f, stderr=subprocess.PIPE)
                try:
                    doc = repack(raw, proc.stdin, store.runtime)
                finally:
                    proc.stdin.close()
                    err = proc.stderr.read().decode("utf-8", "replace").strip()
                    proc.stderr.close()
                    if proc.wait() != 0:
                        raise ArchiveError("%s failed: %s" % (argv[0], err))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        digest, size = sha256_file(tmp)
        os.rename(tmp, path)
        fsync_dir(directory)
    finally:
        for t in (raw, tmp):
            if os.path.exists(t):
                os.unlink(t)
    sidecar = {
        "format": FORMAT,
        "archive": base,
        "sha256": digest,
        "size": size,
        "compression": compression,
        "content_bytes": doc["content_bytes"],
        "source": store.runtime,
        "images": doc["images"],
    }
    return sidecar


def plan_load(store, path, checksum=None, pin=False):
    """What a load of `path` would do, reading only the archive's head. Raises ArchiveError on bad input."""
    if not os.path.isfile(path):
        raise ArchiveError("archive %s does not exist" % path)
    compression = detect_compression(path)
    sidecar = read_sidecar(path)
    expected = checksum or (sidecar or {}).get("sha256")
    index, head_bytes = read_index(path, compression)
    have = store.images()
    missing, unpinned = present(store, index["images"], have, pin)
    content_bytes = index.get("content_bytes") or (sidecar or {}).get("content_bytes")
    return {
        "compression": compression,
        "expected_sha256": parse_sha256(expected) if expected else None,
        "checksum_from": "checksum" if checksum else ("sidecar" if expected else None),
        "index": index,
        "have": have,
        "missing": missing,
        "unpinned": unpinned,
        "content_bytes": content_bytes if content_bytes else os.path.getsize(path),
        "bytes_read": head_bytes,
    }


def verify(path, plan):
    """Full sha256 of the archive against the expected digest, before anything is loaded."""
    if plan["expected_sha256"] is None:
        raise ArchiveError("%s: no checksum to verify it against: pass checksum, or keep the sidecar %s beside it"
                           % (path, sidecar_path(path)))
    digest, nbytes = sha256_file(path)
    plan["bytes_read"] += nbytes
    if digest != plan["expected_sha256"]:
        raise ArchiveError("%s: sha256 %s does not match %s (from %s): the archive is corrupt or truncated; nothing "
                           "was loaded" % (path, digest, plan["expected_sha256"], plan["checksum_from"]))
    return digest


def check_space(store, plan, default_root):
    root = store.root(default_root)
    need = plan["content_bytes"]
    free = free_bytes(root)
    if free < need:
        raise ArchiveError("%s has %d bytes free; loading the archive needs up to %d: nothing was loaded" % (root, free, need))


def load(store, path, plan):
    """Load the archive (streamed through its decompressor), then prove every image is there."""
    argv = decompress_argv(plan["compression"], path)
    if argv is None:
        rc, out, err = store.runner.run(store.load_argv(path))
        if rc != 0:
            raise ArchiveError("%s failed (rc=%d): %s" % (" ".join(store.load_argv(path)[:3]), rc, (err or out).strip()))
    else:
        rc, err = Runner.pipe(argv, store.load_argv())
        if rc != 0:
            raise ArchiveError("loading %s failed (rc=%d): %s" % (path, rc, err))
    plan["bytes_read"] += os.path.getsize(path)
    have = store.images()
    missing, _unpinned = present(store, plan["index"]["images"], have)
    if missing:
        raise ArchiveError("%s loaded, but the store does not show %s" % (path, ", ".join(missing)))
    return have


def ensure_loaded(store, path, checksum=None, pin=False, default_root="/var/lib/containerd", check=False):
    """The whole `loaded` state for one archive. Returns a result dict (same shape for both runtimes)."""
    plan = plan_load(store, path, checksum, pin)
    result = {
        "archive": path,
        "runtime": store.runtime,
        "images": [],
        "loaded": list(plan["missing"]),
        "kept": [i["ref"] for i in plan["index"]["images"] if i["ref"] not in plan["missing"]],
        "pinned": list(plan["unpinned"]) if pin else [],
        "sha256": None,
        "changed": bool(plan["missing"] or plan["unpinned"]),
    }
    if plan["missing"]:
        result["sha256"] = verify(path, plan)
        check_space(store, plan, default_root)
        if not check:
            load(store, path, plan)
    if pin and not check:
        if plan["missing"]:
            _missing, unpinned = present(store, plan["index"]["images"], store.images(), pin)
            result["pinned"] = sorted(set(result["pinned"]) | set(unpinned))
        for ref in result["pinned"]:
            store.pin(ref)
    for image in plan["index"]["images"]:
        result["images"].append({"ref": image["ref"], "id": image.get("id"), "manifest": image.get("manifest"),
                                 "action": "loaded" if image["ref"] in plan["missing"] else "kept"})
    result["bytes_read"] = plan["bytes_read"]
    return result
