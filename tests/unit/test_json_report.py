"""tests/integration/json_report.py: the json callback's report, read once for every lab test and benchmark."""

import json

from tests.integration import json_report

REPORT = json.dumps({"plays": [
    {"play": {"name": "one"}, "tasks": [
        {"task": {"name": "Check every role's variables against its argument spec"},
         "hosts": {"cpu-1": {"changed": False}, "cpu-2": {"failed": True, "msg": "bad"}}},
        {"task": {"name": "kubescale.tuning.local_ssd : Mount it"},
         "hosts": {"cpu-1": {"changed": True}, "cpu-2": {"skipped": True}}}]},
    {"play": {"name": "two"}, "tasks": [
        {"task": {"name": "kubescale.tuning.image_preload : Load"}, "hosts": {"cpu-2": {"changed": False}}}]}],
    "stats": {"cpu-1": {"ok": 2, "changed": 1}, "cpu-2": {"ok": 1, "changed": 0, "failures": 1}}})


def test_results_are_every_task_on_every_host_in_order_without_the_collections_prefix():
    assert [(t, h) for t, h, _r in json_report.results(REPORT)] == [
        ("Check every role's variables against its argument spec", "cpu-1"),
        ("Check every role's variables against its argument spec", "cpu-2"),
        ("local_ssd : Mount it", "cpu-1"), ("local_ssd : Mount it", "cpu-2"), ("image_preload : Load", "cpu-2")]


def test_ran_leaves_out_what_a_host_skipped():
    assert [(t, h) for t, h, _r in json_report.ran(REPORT)] == [
        ("Check every role's variables against its argument spec", "cpu-1"),
        ("Check every role's variables against its argument spec", "cpu-2"),
        ("local_ssd : Mount it", "cpu-1"), ("image_preload : Load", "cpu-2")]


def test_first_is_a_hosts_first_result():
    assert json_report.first(REPORT, "cpu-2") == {"failed": True, "msg": "bad"}
    assert json_report.first(REPORT, "cpu-1") == {"changed": False}


def test_stats_is_the_recap_per_host():
    assert json_report.stats(REPORT) == {"cpu-1": {"ok": 2, "changed": 1}, "cpu-2": {"ok": 1, "changed": 0, "failures": 1}}
