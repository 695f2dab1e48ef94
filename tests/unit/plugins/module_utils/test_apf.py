"""API Priority and Fairness objects for node agents, and the API server's own rules on their settings."""

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils.kube import apf as a

AGENTS = [{"name": "fluentd", "namespace": "logging"}, {"name": "datadog-agent", "namespace": "datadog"}]
GOOD = dict(name="kubescale-node-agents", precedence=1000, shares=10, lendable=0, borrowing=None, queues=16,
            hand_size=4, queue_length=50, agents=AGENTS)


def settings(**kw):
    out = dict(GOOD)
    out.update(kw)
    return out


def test_the_objects():
    level, schema = a.objects(**GOOD)
    assert level == {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
                     "metadata": {"name": "kubescale-node-agents"},
                     "spec": {"type": "Limited", "limited": {
                         "nominalConcurrencyShares": 10, "lendablePercent": 0,
                         "limitResponse": {"type": "Queue", "queuing": {"queues": 16, "handSize": 4,
                                                                        "queueLengthLimit": 50}}}}}
    spec = schema["spec"]
    assert spec["priorityLevelConfiguration"] == {"name": "kubescale-node-agents"}
    assert spec["matchingPrecedence"] == 1000 and spec["distinguisherMethod"] == {"type": "ByUser"}
    assert spec["rules"][0]["subjects"] == [
        {"kind": "ServiceAccount", "serviceAccount": {"name": "fluentd", "namespace": "logging"}},
        {"kind": "ServiceAccount", "serviceAccount": {"name": "datadog-agent", "namespace": "datadog"}}]
    assert spec["rules"][0]["resourceRules"][0]["clusterScope"] is True
    assert spec["rules"][0]["nonResourceRules"] == [{"verbs": ["*"], "nonResourceURLs": ["*"]}]
    assert "borrowingLimitPercent" not in level["spec"]["limited"]


def test_good_settings_have_no_problems():
    assert a.problems(**GOOD) == []
    assert a.problems(**settings(borrowing=100, lendable=None, queues=1, hand_size=1)) == []
    assert a.problems(**settings(agents=[{"name": "*", "namespace": "monitoring"}])) == []


@pytest.mark.parametrize("kw,message", [
    (dict(name="Node_Agents"), "x_name: 'Node_Agents' is not a DNS subdomain"),
    (dict(precedence=9000), "x_matching_precedence: 9000 is not in 1..8999"),
    (dict(precedence=0), "x_matching_precedence: 0 is not in 1..8999"),
    (dict(shares=0), "x_nominal_concurrency_shares: 0 is not a whole number of 1 or more"),
    (dict(lendable=101), "x_lendable_percent: 101 is not in 0..100"),
    (dict(borrowing=-1), "x_borrowing_limit_percent: -1 is not in 0..100"),
    (dict(queues=0), "x_queues: 0 is not a whole number of 1 or more"),
    (dict(hand_size=17), "x_hand_size: 17 is more than queues (16)"),
    (dict(queues=128, hand_size=9), "x_hand_size: 9 of 128 queues needs 63 bits of shuffle-shard entropy"),
    (dict(queue_length=0), "x_queue_length_limit: 0 is not a whole number"),
    (dict(agents=[]), "x_agents: give at least one"),
    (dict(agents=[{"name": "fluentd"}]), "x_agents[0]: {'name': 'fluentd'} is not {name, namespace}"),
    (dict(agents=[{"name": "Fluentd", "namespace": "logging"}]), "x_agents[0].name: 'Fluentd' is not a service"),
    (dict(agents=[{"name": "fluentd", "namespace": "kube.system"}]), "x_agents[0].namespace: 'kube.system' is not"),
    (dict(agents=AGENTS + AGENTS[:1]), "x_agents[2]: logging/fluentd is listed twice"),
])
def test_bad_settings_name_the_setting(kw, message):
    found = a.problems(prefix="x_", **settings(**kw))
    assert any(message in p for p in found), found
