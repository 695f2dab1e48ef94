# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: the boot-time loader - every archive of a directory that has a sidecar, loaded into the runtime.

The image_preload role installs this package (the standard-library modules of module_utils/images) on nodes, and
kubescale-image-preload.service runs ``python3 -m <package>.boot --runtime docker --dir /opt/kubescale/images``
before the kubelet, so a node whose local SSD was wiped gets its images back by digest.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import os
import sys

from .archive import ensure_loaded
from .files import ArchiveError
from .store import RUNTIMES, Runner, Store


def main(argv=None):
    """Load every archive of a directory that has a sidecar (the boot unit's entry point)."""
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
    raise SystemExit(main())
