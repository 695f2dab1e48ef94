#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: dir_sync
short_description: Copy a daemon's data directory to a new place and prove the copy is whole
version_added: "0.2.0"
description:
  - Makes O(dest) an exact copy of O(src) with C(rsync -aHAX --numeric-ids --delete) (hard links, ACLs and
    extended attributes kept, which overlay2's C(trusted.overlay.*) attributes need), then runs the same
    comparison again as a dry run and fails unless it finds nothing left to copy.
  - Checks free space on O(dest)'s filesystem against the bytes O(src) holds before copying anything.
  - Never touches O(src). The caller stops the daemon first and switches its configuration after.
  - Idempotent, when the dry run finds nothing to copy, nothing is run.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  src:
    description: The directory to copy (the daemon's current data directory).
    type: path
    required: true
  dest:
    description: The directory to make equal to O(src); created when missing. Must not be inside O(src) or hold it.
    type: path
    required: true
  verify:
    description:
      - C(metadata) compares size, times, owners, modes, links and attributes (rsync's quick check).
      - C(checksum) also reads every file on both sides and compares contents.
    type: str
    default: metadata
    choices: [metadata, checksum]
extends_documentation_fragment:
  - kubescale.tuning.attributes
attributes:
  check_mode:
    support: full
    details: Runs only the dry-run comparison and reports how many entries would be copied or removed.
  diff_mode:
    support: none
  platform:
    platforms: posix
requirements:
  - rsync on the node.
"""

EXAMPLES = r"""
- name: Copy Docker's data-root to the local SSD (docker is stopped)
  kubescale.tuning.dir_sync:
    src: /var/lib/docker
    dest: /mnt/local-ssd/docker
"""

RETURN = r"""
pending:
  description: Entries the dry run found to copy, update or delete before the copy.
  returned: always
  type: int
  sample: 1830
src_bytes:
  description: Bytes allocated by O(src) (what the free-space check used).
  returned: always
  type: int
files:
  description: Entries (files, directories, links) in O(src).
  returned: always
  type: int
verified:
  description: Whether the comparison after copying found nothing left.
  returned: always
  type: bool
"""

import os

from ansible.module_utils.basic import AnsibleModule


def tree_usage(top):
    """(entries, bytes allocated) under `top`, hard links counted once."""
    seen = set()
    entries = 0
    used = 0
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            entries += 1
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            used += st.st_blocks * 512
    return entries, used


def inside(child, parent):
    return child == parent or child.startswith(parent.rstrip("/") + "/")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            src=dict(type="path", required=True),
            dest=dict(type="path", required=True),
            verify=dict(type="str", default="metadata", choices=["metadata", "checksum"]),
        ),
        supports_check_mode=True,
    )
    src = module.params["src"]
    dest = module.params["dest"]
    for name, value in (("src", src), ("dest", dest)):
        if not os.path.isabs(value) or os.path.normpath(value) in ("/",):
            module.fail_json(msg="%s: %r must be an absolute path other than /" % (name, value))
    src = os.path.realpath(src)
    dest_real = os.path.realpath(dest)
    if inside(dest_real, src) or inside(src, dest_real):
        module.fail_json(msg="dest: %s and src %s must not contain each other" % (dest, src))
    if not os.path.isdir(src):
        module.fail_json(msg="src: %s is not a directory" % src)
    if os.path.exists(dest) and not os.path.isdir(dest):
        module.fail_json(msg="dest: %s exists and is not a directory" % dest)
    rsync = module.get_bin_path("rsync", required=True)
    base = [rsync, "-aHAX", "--numeric-ids", "--delete"]
    if module.params["verify"] == "checksum":
        base.append("--checksum")

    def pending():
        if not os.path.isdir(dest):
            return None
        rc, out, err = module.run_command(base + ["--dry-run", "--itemize-changes", src + "/", dest + "/"])
        if rc != 0:
            module.fail_json(msg="dest: comparing %s with %s failed: %s" % (src, dest, err.strip()), rc=rc)
        return [line for line in out.splitlines() if line.strip()]

    entries, used = tree_usage(src)
    before = pending()
    result = dict(src_bytes=used, files=entries, verified=before == [],
                  pending=entries + 1 if before is None else len(before))
    if before == []:
        module.exit_json(changed=False, **result)
    if module.check_mode:
        module.exit_json(changed=True, **result)

    parent = os.path.dirname(dest.rstrip("/")) or "/"
    probe = dest if os.path.isdir(dest) else parent
    st = os.statvfs(probe)
    free = st.f_bavail * st.f_frsize
    already = tree_usage(dest)[1] if os.path.isdir(dest) else 0
    if used - already > free:
        module.fail_json(msg="dest: %s has %d bytes free, %s needs %d more; nothing was copied"
                         % (probe, free, src, used - already), **result)
    if not os.path.isdir(dest):
        try:
            os.makedirs(dest)
        except OSError as exc:
            module.fail_json(msg="dest: cannot create %s: %s" % (dest, exc), **result)
    rc, out, err = module.run_command(base + [src + "/", dest + "/"])
    if rc != 0:
        module.fail_json(msg="dest: copying %s to %s failed (rsync exit %d): %s" % (src, dest, rc, err.strip()),
                         **result)
    after = pending()
    result["verified"] = after == []
    if after:
        module.fail_json(msg="dest: %s still differs from %s after the copy (%d entries, first: %s)"
                         % (dest, src, len(after), after[0]), **result)
    module.exit_json(changed=True, **result)


if __name__ == "__main__":
    main()
