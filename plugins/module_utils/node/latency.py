# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: etcd's fsync probe (fio --rw=write --ioengine=sync --fdatasync=1 --bs=2300 --size=22m).

Sequential writes of `block_size` bytes, each followed by fdatasync(); the fdatasync durations are
what etcd's WAL waits on, so their percentiles are the result (fio reports the same as "sync" latency).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time


class LatencyError(Exception):
    """Bad input or a directory that cannot be measured; nothing is left behind."""


def percentile(sorted_values, pct):
    """Nearest-rank percentile of an already sorted list (what fio's clat percentiles use)."""
    if not sorted_values:
        return None
    rank = max(1, int(-(-pct * len(sorted_values) // 100)))  # ceil(pct/100 * n)
    return sorted_values[min(rank, len(sorted_values)) - 1]


def measure(directory, size=22 * 1024 * 1024, block_size=2300, warmup=64, timeout=30.0, clock=None):
    """Measure fdatasync latency in `directory`. Returns a dict of figures in milliseconds.

    Writes at most `size` bytes (plus `warmup` blocks not counted), stops early after `timeout`
    seconds, and always removes its temp file.
    """
    clock = clock or time.perf_counter
    if not os.path.isabs(directory):
        raise LatencyError("path: %r must be an absolute directory" % directory)
    if not os.path.isdir(directory):
        raise LatencyError("path: %s is not an existing directory" % directory)
    if block_size < 512 or block_size > 1024 * 1024:
        raise LatencyError("block_size: %r must be between 512 and 1048576 bytes" % block_size)
    if size < block_size * 16:
        raise LatencyError("size: %r must be at least 16 blocks of block_size (%d)" % (size, block_size * 16))
    if timeout <= 0:
        raise LatencyError("timeout: %r must be positive" % timeout)
    st = os.statvfs(directory)
    needed = size + warmup * block_size
    if st.f_bavail * st.f_frsize < needed * 2:
        raise LatencyError("path: %s has %d bytes free, the probe needs %d"
                           % (directory, st.f_bavail * st.f_frsize, needed * 2))
    path = os.path.join(directory, ".kubescale-disk-latency.%d" % os.getpid())
    block = os.urandom(block_size)
    syncs = []
    writes = []
    truncated = False
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        # Preallocate, as etcd does for its WAL segments and fio does for its file: fdatasync then
        # flushes data, not a growing file size.
        try:
            os.posix_fallocate(fd, 0, needed)
        except (AttributeError, OSError):
            os.ftruncate(fd, needed)
        for _i in range(warmup):
            os.write(fd, block)
            os.fdatasync(fd)
        count = size // block_size
        started = clock()
        for _i in range(count):
            t0 = clock()
            os.write(fd, block)
            t1 = clock()
            os.fdatasync(fd)
            t2 = clock()
            writes.append(t1 - t0)
            syncs.append(t2 - t1)
            if t2 - started > timeout:
                truncated = True
                break
        elapsed = clock() - started
    finally:
        os.close(fd)
        os.unlink(path)
    syncs.sort()
    ms = 1000.0
    return {
        "path": directory,
        "samples": len(syncs),
        "bytes_written": len(syncs) * block_size,
        "truncated": truncated,
        "elapsed_s": round(elapsed, 3),
        "iops": round(len(syncs) / elapsed, 1) if elapsed > 0 else None,
        "p50_ms": round(percentile(syncs, 50) * ms, 4),
        "p90_ms": round(percentile(syncs, 90) * ms, 4),
        "p99_ms": round(percentile(syncs, 99) * ms, 4),
        "max_ms": round(syncs[-1] * ms, 4),
        "mean_ms": round(sum(syncs) / len(syncs) * ms, 4),
        "write_p99_ms": round(percentile(sorted(writes), 99) * ms, 4),
    }
