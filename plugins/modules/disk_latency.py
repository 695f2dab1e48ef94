#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: disk_latency
short_description: Measure the fdatasync latency etcd will see in a directory
version_added: "0.1.0"
description:
  - Runs etcd's disk check the way its fio recipe does
    (C(fio --rw=write --ioengine=sync --fdatasync=1 --bs=2300 --size=22m)), with the standard library only,
    sequential writes of O(block_size) bytes, each followed by C(fdatasync).
  - Returns p50/p90/p99/max of the C(fdatasync) durations in milliseconds and the IOPS.
  - Fails, after cleaning up, when p99 is above O(max_p99_ms) (etcd asks for under 10 ms).
  - Warm-up writes are not counted; the temp file is always removed; the run stops after O(timeout) seconds.
author:
  - kubescale.tuning contributors (@kubescale)
options:
  path:
    description: The directory to measure (the disk etcd's data dir will live on).
    type: path
    required: true
  size:
    description: Bytes to write (fio's C(--size)); a suffix k, m or g is accepted.
    type: str
    default: 22m
  block_size:
    description: Bytes per write (fio's C(--bs)); etcd's WAL entries are around 2300 bytes.
    type: int
    default: 2300
  warmup:
    description: Writes done first and not counted.
    type: int
    default: 64
  timeout:
    description: Stop measuring after this many seconds and report what was measured (C(truncated=true)).
    type: float
    default: 30
  max_p99_ms:
    description: Fail when the p99 fdatasync latency is above this many milliseconds; 0 disables the check.
    type: float
    default: 10
extends_documentation_fragment:
  - kubescale.tuning.attributes
attributes:
  check_mode:
    support: full
    details: Measures in check mode too; it leaves nothing behind either way.
  diff_mode:
    support: none
  platform:
    platforms: posix
"""

EXAMPLES = r"""
- name: Gate etcd's move onto the local SSD
  kubescale.tuning.disk_latency:
    path: /mnt/local-ssd
    max_p99_ms: 10
  register: ssd_latency

- name: Audit only, never fail
  kubescale.tuning.disk_latency:
    path: /var/lib/etcd
    max_p99_ms: 0
    timeout: 5
"""

RETURN = r"""
latency:
  description: The measurement.
  returned: always
  type: dict
  sample:
    path: /mnt/local-ssd
    samples: 10029
    bytes_written: 23066700
    truncated: false
    elapsed_s: 2.1
    iops: 4775.6
    p50_ms: 0.18
    p90_ms: 0.21
    p99_ms: 0.26
    max_ms: 3.1
    mean_ms: 0.19
    write_p99_ms: 0.01
"""

import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubescale.tuning.plugins.module_utils.node.latency import LatencyError, measure

SIZE_RE = re.compile(r"^([0-9]+)([kmg]?)$", re.IGNORECASE)


def parse_size(text):
    m = SIZE_RE.match(str(text).strip())
    if not m:
        raise LatencyError("size: %r is not a byte count like 22m, 512k or 1g" % (text,))
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}[m.group(2).lower()]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            size=dict(type="str", default="22m"),
            block_size=dict(type="int", default=2300),
            warmup=dict(type="int", default=64),
            timeout=dict(type="float", default=30.0),
            max_p99_ms=dict(type="float", default=10.0),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        if p["warmup"] < 0:
            raise LatencyError("warmup: %r must be 0 or more" % p["warmup"])
        if p["max_p99_ms"] < 0:
            raise LatencyError("max_p99_ms: %r must be 0 (off) or more" % p["max_p99_ms"])
        result = measure(p["path"], parse_size(p["size"]), p["block_size"], p["warmup"], p["timeout"])
    except LatencyError as exc:
        module.fail_json(msg=str(exc))
    except OSError as exc:
        module.fail_json(msg="path: cannot measure %s: %s" % (p["path"], exc))
    if p["max_p99_ms"] and result["p99_ms"] > p["max_p99_ms"]:
        module.fail_json(msg="path: %s fdatasync p99 is %.3f ms, above max_p99_ms %.3f ms (etcd asks for < 10 ms)"
                         % (p["path"], result["p99_ms"], p["max_p99_ms"]), latency=result)
    module.exit_json(changed=False, latency=result)


if __name__ == "__main__":
    main()
