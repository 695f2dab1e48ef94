# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: an image archive's sidecar - `<archive>.json` beside it (or `.json` added to its URL's path), naming its
sha256, size, compression and images. Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from urllib.parse import urlsplit, urlunsplit

from .files import ArchiveError


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


def read_sidecar(path):
    try:
        with open(sidecar_path(path)) as f:
            doc = json.load(f)
    except (IOError, OSError):
        return None
    except ValueError as exc:
        raise ArchiveError("%s is not valid JSON: %s" % (sidecar_path(path), exc)) from exc
    return doc if isinstance(doc, dict) else None


def sidecar_text(doc):
    return json.dumps(doc, sort_keys=True, indent=2) + "\n"
