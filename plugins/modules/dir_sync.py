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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.node.dirsync import SyncError, sync


def main():
    module = AnsibleModule(
        argument_spec=dict(
            src=dict(type="path", required=True),
            dest=dict(type="path", required=True),
            verify=dict(type="str", default="metadata", choices=["metadata", "checksum"]),
        ),
        supports_check_mode=True,
    )
    rsync = module.get_bin_path("rsync", required=True)
    try:
        changed, result = sync(module.run_command, rsync, module.params["src"], module.params["dest"],
                               module.params["verify"], module.check_mode)
    except SyncError as exc:
        module.fail_json(msg=str(exc), **exc.result)
    module.exit_json(changed=changed, **result)


if __name__ == "__main__":
    main()
