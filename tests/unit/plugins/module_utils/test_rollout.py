"""module_utils/fleet/rollout.py: a play's batch sizes and failure threshold, judged before the play starts."""

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils.fleet import rollout as _rollout


@pytest.mark.parametrize("value", [1, "1", 25, "10%", "100%", "2.5%", [1, "10%", "25%"], ["50%"]])
def test_batch_sizes(value):
    assert _rollout.batch_problem(value) == ""


@pytest.mark.parametrize("value, words", [
    ("many", "'many' is not a whole number of hosts or a percentage like 10%"),
    (0, "0 hosts is not a batch (1 or more)"),
    ("0", "0 hosts is not a batch (1 or more)"),
    (-2, "-2 hosts is not a batch"),
    ("0%", "0% is not a share of the hosts"),
    ("150%", "150% is not a share of the hosts (above 0%, at most 100%)"),
    (True, "True is not a batch size"),
    ([], "an empty list sizes no batch"),
    ([1, "x", 0], "'x' is not a whole number of hosts or a percentage like 10%; 0 hosts is not a batch"),
    ({"a": 1}, "{'a': 1} is not a whole number of hosts"),
    ("[2,'50%']", "\"[2,'50%']\" is not a whole number of hosts"),
])
def test_bad_batch_sizes(value, words):
    assert _rollout.batch_problem(value).startswith(words)


@pytest.mark.parametrize("value", [0, "0", 100, 12.5, "30"])
def test_percentages(value):
    assert _rollout.percent_problem(value) == ""


@pytest.mark.parametrize("value", [-1, 101, "many", None, True, [10]])
def test_bad_percentages(value):
    assert _rollout.percent_problem(value) == "%r is not a percentage of failed hosts from 0 to 100" % (value,)
