# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: container image archives (one tar of many images, an index at its head, a sidecar).

Standard library only and no Ansible import: the image_archive module uses it, and the image_preload role
installs this same file on nodes as the boot-time loader (``python3 _image_archive.py --runtime docker
--dir /opt/kubescale/images``), so a node whose local SSD was wiped reloads its images before the kubelet.

Archive layout: the runtime's own export (``docker save`` or ``ctr images export``) re-packed with one extra
member first, ``kubescale-index.json`` (refs, image IDs = config digests, manifest digests). Reading that member
decompresses a few KiB from the head of the stream, so deciding that nothing needs loading reads no layer bytes.
docker and ctr ignore the extra member. Archives without it (a plain ``docker save``) are read to the end.

Commands run from an argv list, never a shell. Pipes between commands (decompressor into ``docker load``) use
subprocess with argv lists because Ansible's run_command has no pipes and the archive must stream, never sit in
memory.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import io
import json
import os
import re
import shlex
import subprocess
import tarfile
import tempfile
from urllib.parse import urlsplit, urlunsplit

FORMAT = 1
INDEX_MEMBER = "kubescale-index.json"
COMPRESSIONS = ("zstd", "gzip", "none")
RUNTIMES = ("docker", "containerd")
PIN_LABEL = "io.cri-containerd.pinned"
CHUNK = 1 << 20

_NAME_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_DOMAIN = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]+)?$")
_SHA256 = re.compile(r"^(?:sha256:)?([0-9a-f]{64})$")


class ArchiveError(Exception):
    """A failure to report as is: names the archive, the image or the option."""


def normalize_ref(ref):
    """The fully qualified form docker and containerd agree on: 'pause:3.9' -> 'docker.io/library/pause:3.9'.

    Only name[:tag] references: a digest reference cannot be re-tagged by a load.
    """
    if not isinstance(ref, str) or not ref or ref.strip() != ref or "@" in ref:
        raise ValueError("%r is not an image reference of the form [registry/]name[:tag]" % (ref,))
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > slash:
        repo, tag = ref[:colon], ref[colon + 1:]
    else:
        repo, tag = ref, "latest"
    first, sep, rest = repo.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        domain, path = first, rest
    else:
        domain, path = "docker.io", repo
    if domain == "index.docker.io":
        domain = "docker.io"
    if domain == "docker.io" and "/" not in path:
        path = "library/" + path
    if not _DOMAIN.match(domain) or not _TAG.match(tag) or not all(_NAME_COMPONENT.match(c) for c in path.split("/")):
        raise ValueError("%r is not an image reference of the form [registry/]name[:tag]" % (ref,))
    return "%s/%s:%s" % (domain, path, tag)


def parse_sha256(value):
    """'sha256:<hex>' or '<hex>' -> '<hex>'; ValueError otherwise."""
    m = _SHA256.match(value.strip().lower()) if isinstance(value, str) else None
    if not m:
        raise ValueError("%r is not a sha256 digest (64 hex digits, optionally prefixed sha256:)" % (value,))
    return m.group(1)


def detect_compression(path):
    with open(path, "rb") as f:
        head = f.read(4)
    if head == b"\x28\xb5\x2f\xfd":
        return "zstd"
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    return "none"


def decompress_argv(compression, path):
    if compression == "zstd":
        return ["zstd", "-dcq", "--", path]
    if compression == "gzip":
        return ["gzip", "-dc", "--", path]
    return None


def compress_argv(compression, level):
    if compression == "zstd":
        return ["zstd", "-q", "-c", "-T0", "-%d" % level]
    if compression == "gzip":
        return ["gzip", "-c", "-%d" % level]
    return None


def sidecar_path(path):
    return path + ".json"


def sidecar_url(url):
    """Where the sidecar of an archive at `url` is: `.json` added to the URL's path, its query (a SAS token) kept.

    http(s) only; a URL with a fragment, or without a file name in its path, is refused (ValueError)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("%r is not an http:// or https:// URL" % url)
    if parts.fragment:
        raise ValueError("%r has a fragment (#...)" % url)
    if not parts.path or parts.path.endswith("/"):
        raise ValueError("%r names no file" % url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path + ".json", parts.query, ""))


def sha256_file(path):
    """(hex digest, bytes read), streaming."""
    h = hashlib.sha256()
    n = 0
    with open(path, "rb") as f:
        while True:
            buf = f.read(CHUNK)
            if not buf:
                break
            h.update(buf)
            n += len(buf)
    return h.hexdigest(), n


def free_bytes(path):
    while not os.path.exists(path):
        path = os.path.dirname(path) or "/"
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


class _Counting(object):
    """A read-only stream that counts the bytes taken from it."""

    def __init__(self, raw):
        self.raw = raw
        self.count = 0

    def read(self, size=-1):
        data = self.raw.read(size)
        self.count += len(data)
        return data


def _config_id(config_path):
    base = os.path.basename(config_path)
    if base.endswith(".json"):
        base = base[:-5]
    return "sha256:" + parse_sha256(base)


def images_from_manifests(manifest_json, index_json):
    """Images of a docker-archive (manifest.json) and/or OCI layout (index.json), keyed by normalized ref.

    Returns {ref: {"id": config digest or None, "manifest": manifest digest or None}}.
    """
    images = {}
    for entry in manifest_json or []:
        image_id = _config_id(entry.get("Config", ""))
        for tag in entry.get("RepoTags") or []:
            images.setdefault(normalize_ref(tag), {"id": None, "manifest": None})["id"] = image_id
    for desc in (index_json or {}).get("manifests") or []:
        name = (desc.get("annotations") or {}).get("io.containerd.image.name")
        if name:
            images.setdefault(normalize_ref(name), {"id": None, "manifest": None})["manifest"] = desc.get("digest")
    return images


def _index_doc(images, source, content_bytes):
    return {
        "format": FORMAT,
        "source": source,
        "content_bytes": content_bytes,
        "images": [dict(ref=ref, id=images[ref]["id"], manifest=images[ref]["manifest"]) for ref in sorted(images)],
    }


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


def open_stream(path, compression):
    """(readable stream of the tar, process or None, raw file or None) for `path`."""
    argv = decompress_argv(compression, path)
    if argv is None:
        raw = open(path, "rb")
        return raw, None, raw
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc.stdout, proc, None


def close_stream(proc, raw, complete, path):
    """Stop the decompressor; when the stream was read to its end, a decompressor error is an ArchiveError."""
    if raw is not None:
        raw.close()
        return
    if not complete:
        proc.kill()
    proc.stdout.close()
    err = proc.stderr.read().decode("utf-8", "replace").strip()
    proc.stderr.close()
    rc = proc.wait()
    if complete and rc != 0:
        raise ArchiveError("%s: decompressing failed, the archive is corrupt or truncated (%s: %s)"
                           % (path, proc.args[0], err))


def read_index(path, compression=None):
    """What the archive holds, from its head when it has our index: (index doc, decompressed bytes read).

    Streams; never holds more than one small member in memory. A truncated or corrupt stream raises
    ArchiveError when the index had to be looked for in it.
    """
    if compression is None:
        compression = detect_compression(path)
    stream, proc, raw = open_stream(path, compression)
    counting = _Counting(stream)
    complete = False
    manifest_json = index_json = None
    try:
        try:
            tar = tarfile.open(fileobj=counting, mode="r|")
            for member in tar:
                if member.name in (INDEX_MEMBER, "./" + INDEX_MEMBER) and member.isfile():
                    doc = json.loads(tar.extractfile(member).read().decode("utf-8"))
                    if doc.get("format") != FORMAT:
                        raise ArchiveError("%s: index format %r, this version reads %d" % (path, doc.get("format"), FORMAT))
                    return doc, counting.count
                name = member.name[2:] if member.name.startswith("./") else member.name
                if name in ("manifest.json", "index.json") and member.isfile():
                    data = json.loads(tar.extractfile(member).read().decode("utf-8"))
                    if name == "manifest.json":
                        manifest_json = data
                    else:
                        index_json = data
            complete = True
        except (tarfile.TarError, EOFError, ValueError, UnicodeDecodeError) as exc:
            complete = True
            raise ArchiveError("%s is not a readable image archive (%s): %s" % (path, compression, exc)) from exc
    finally:
        close_stream(proc, raw, complete, path)
    if manifest_json is None and index_json is None:
        raise ArchiveError("%s holds no image (no manifest.json or index.json)" % path)
    images = images_from_manifests(manifest_json, index_json)
    return _index_doc(images, "unknown", None), counting.count


def read_sidecar(path):
    try:
        with open(sidecar_path(path)) as f:
            doc = json.load(f)
    except (IOError, OSError):
        return None
    except ValueError as exc:
        raise ArchiveError("%s is not valid JSON: %s" % (sidecar_path(path), exc)) from exc
    return doc if isinstance(doc, dict) else None


# ---------------------------------------------------------------------------------------------- runtimes


def _parse_size(text):
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
                              "size": _parse_size(parts[2]) if len(parts) > 2 else 0}
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
            found[ref] = {"id": None, "manifest": parts[2], "labels": labels, "size": _parse_size(" ".join(parts[3:5]))}
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


# ---------------------------------------------------------------------------------------------- save


def _tmp_name(directory, base, suffix):
    fd, tmp = tempfile.mkstemp(prefix="." + base + ".", suffix=suffix, dir=directory)
    os.close(fd)
    return tmp


def _fsync_dir(directory):
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def repack(src_tar, out_stream, source):
    """Write `src_tar`'s members to `out_stream` as a tar with our index first. Returns the index doc."""
    with tarfile.open(src_tar, "r:") as src:
        members = src.getmembers()
        manifest_json = index_json = None
        for m in members:
            name = m.name[2:] if m.name.startswith("./") else m.name
            if name == "manifest.json" and m.isfile():
                manifest_json = json.loads(src.extractfile(m).read().decode("utf-8"))
            elif name == "index.json" and m.isfile():
                index_json = json.loads(src.extractfile(m).read().decode("utf-8"))
        images = images_from_manifests(manifest_json, index_json)
        doc = _index_doc(images, source, sum(m.size for m in members))
        data = json.dumps(doc, sort_keys=True, indent=1).encode("utf-8")
        out = tarfile.open(fileobj=out_stream, mode="w|", format=tarfile.PAX_FORMAT)
        out.copybufsize = CHUNK
        info = tarfile.TarInfo(INDEX_MEMBER)
        info.size = len(data)
        info.mode = 0o644
        out.addfile(info, io.BytesIO(data))
        for m in members:
            out.addfile(m, src.extractfile(m) if m.isfile() else None)
        out.close()
    return doc


def save(store, refs, path, compression, level):
    """Export `refs` into one archive at `path` (atomic), then its sidecar. Returns the sidecar doc."""
    directory = os.path.dirname(path)
    base = os.path.basename(path)
    raw = _tmp_name(directory, base, ".export.tar")
    tmp = _tmp_name(directory, base, ".part")
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
        _fsync_dir(directory)
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


def sidecar_text(doc):
    return json.dumps(doc, sort_keys=True, indent=2) + "\n"


# ---------------------------------------------------------------------------------------------- load


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


# ---------------------------------------------------------------------------------------------- boot loader


def boot_main(argv=None):
    """Load every archive of a directory that has a sidecar (the boot unit's entry point)."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description="Load kubescale image archives into the container runtime.")
    parser.add_argument("--runtime", choices=RUNTIMES, required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--namespace", default="k8s.io")
    parser.add_argument("--pin", action="store_true")
    parser.add_argument("--root", default="/var/lib/containerd")
    args = parser.parse_args(argv)
    store = Store(Runner(), args.runtime, args.namespace)
    failed = 0
    names = sorted(n for n in os.listdir(args.dir) if n.endswith(".json") and not n.startswith("."))
    for name in names:
        path = os.path.join(args.dir, name[:-5])
        if not os.path.isfile(path):
            continue
        try:
            res = ensure_loaded(store, path, pin=args.pin, default_root=args.root)
        except (ArchiveError, ValueError, OSError) as exc:
            failed += 1
            sys.stderr.write("kubescale-image-preload: %s\n" % exc)
            continue
        sys.stdout.write("kubescale-image-preload: %s: loaded %d, already present %d, pinned %d, %d bytes read\n"
                         % (path, len(res["loaded"]), len(res["kept"]), len(res["pinned"]), res["bytes_read"]))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(boot_main())


# ---------------------------------------------------------------------------------------------- pause image sources

PAUSE_FLAG = "--pod-infra-container-image"


def pause_image_in(path, text):
    """The pause image a node's file names, or '' when it names none.

    A `.fact` file is containerd_tuning's JSON fact (its `sandbox_image`); any other file is a systemd environment
    file (kubeadm-flags.env, /etc/default/kubelet) whose variables carry the kubelet's flags.
    """
    if path.endswith(".fact"):
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise ArchiveError("%s is not valid JSON: %s" % (path, exc)) from exc
        return (doc.get("sandbox_image") or "") if isinstance(doc, dict) else ""
    # Imported here: this file also runs on its own as the boot-time loader, which never reads these files.
    from ansible_collections.kubescale.tuning.plugins.module_utils._confmerge import parse_env
    try:
        env = parse_env(text)
    except ValueError as exc:
        raise ArchiveError("%s: %s" % (path, exc)) from exc
    for value in env.values():
        words = shlex.split(value) if isinstance(value, str) else []
        for i, word in enumerate(words):
            if word.startswith(PAUSE_FLAG + "="):
                return word.split("=", 1)[1]
            if word == PAUSE_FLAG and i + 1 < len(words):
                return words[i + 1]
    return ""


def pause_conflicts(sources, pause_image):
    """['<file> names <image>', ...] for each of {path: text or None} naming another pause image than pause_image."""
    want = normalize_ref(pause_image)
    found = []
    for path in sources:
        text = sources[path]
        if text is None:
            continue
        image = pause_image_in(path, text)
        if not image:
            continue
        try:
            same = normalize_ref(image) == want
        except ValueError:
            same = False
        if not same:
            found.append("%s names %s" % (path, image))
    return found


def conflict_message(variable, image, conflicts):
    """The failure naming the variable, what the node's files name, and the two ways to agree."""
    return ("%s (%s) is not the pause image this node uses: %s. Set %s to it, or make the kubelet's "
            "--pod-infra-container-image and the runtime's sandbox image name %s."
            % (variable, image, "; ".join(conflicts), variable, image))
