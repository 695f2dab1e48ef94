"""Unit tests for the disk_latency probe."""

import os

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils.node import latency as L


def test_percentile_nearest_rank():
    values = list(range(1, 101))
    assert L.percentile(values, 50) == 50
    assert L.percentile(values, 99) == 99
    assert L.percentile(values, 100) == 100
    assert L.percentile([7], 99) == 7
    assert L.percentile([], 99) is None


def test_measure_reports_and_cleans_up(tmp_path):
    res = L.measure(str(tmp_path), size=2300 * 200, warmup=4)
    assert res["samples"] == 200 and res["bytes_written"] == 460000 and not res["truncated"]
    assert 0 < res["p50_ms"] <= res["p90_ms"] <= res["p99_ms"] <= res["max_ms"]
    assert res["iops"] > 0
    assert os.listdir(str(tmp_path)) == []


def test_timeout_bounds_the_run(tmp_path):
    ticks = iter(x * 0.5 for x in range(10 ** 6))  # each clock read advances 0.5 s
    res = L.measure(str(tmp_path), size=2300 * 1000, warmup=0, timeout=3, clock=lambda: next(ticks))
    assert res["truncated"] and res["samples"] < 10
    assert os.listdir(str(tmp_path)) == []


@pytest.mark.parametrize("kwargs,message", [
    ({"directory": "relative/dir"}, "absolute"),
    ({"directory": "/nonexistent/kubescale"}, "not an existing directory"),
    ({"block_size": 100}, "block_size"),
    ({"size": 1000}, "size"),
    ({"timeout": 0}, "timeout"),
])
def test_bad_input(tmp_path, kwargs, message):
    args = {"directory": str(tmp_path)}
    args.update(kwargs)
    with pytest.raises(L.LatencyError, match=message):
        L.measure(**args)
    assert os.listdir(str(tmp_path)) == []
