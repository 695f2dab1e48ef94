# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: what an image archive holds, from the index it carries at its head.

Archive layout: the runtime's own export (``docker save`` or ``ctr images export``) re-packed with one extra
member first, ``kubescale-index.json`` (refs, image IDs = config digests, manifest digests). Reading that member
decompresses a few KiB from the head of the stream, so deciding that nothing needs loading reads no layer bytes.
docker and ctr ignore the extra member. Archives without it (a plain ``docker save``) are read to the end.
Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import json
import os
import tarfile

from .compression import close_stream, detect_compression, open_stream
from .files import CHUNK, ArchiveError
from .ref import normalize_ref, parse_sha256

FORMAT = 1
INDEX_MEMBER = "kubescale-index.json"


class Counting(object):
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


def read_index(path, compression=None):
    """What the archive holds, from its head when it has our index: (index doc, decompressed bytes read).

    Streams; never holds more than one small member in memory. A truncated or corrupt stream raises
    ArchiveError when the index had to be looked for in it.
    """
    if compression is None:
        compression = detect_compression(path)
    stream, proc, raw = open_stream(path, compression)
    counting = Counting(stream)
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
