# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: API Priority and Fairness objects that hold node agents (Fluentd, Datadog, ...) to a share of their own.

The rules checked are the API server's own validation of flowcontrol.apiserver.k8s.io/v1 (pkg/apis/flowcontrol/
validation): names are DNS subdomains, matchingPrecedence 1..10000, nominalConcurrencyShares >= 0 (0 only with
borrowing), queues >= 1, handSize <= queues and its shuffle-shard entropy at most 60 bits, queueLengthLimit >= 1,
lendable/borrowing percent 0..100; service account names and namespaces are DNS labels/subdomains.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

API = "flowcontrol.apiserver.k8s.io/v1"
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# The suggested FlowSchemas a node agent's requests would fall into otherwise: "service-accounts" (9000) and
# "kube-system-service-accounts" (900); a schema must come before the first to catch the agents.
SERVICE_ACCOUNTS_PRECEDENCE = 9000
MAX_ENTROPY_BITS = 60


def _whole(value):
    return isinstance(value, int) and not isinstance(value, bool)


def problems(name, precedence, shares, lendable, borrowing, queues, hand_size, queue_length, agents, prefix=""):
    """Every problem with the settings, each naming its setting (`prefix` + name); empty when there is none."""
    out = []
    if not isinstance(name, str) or len(name) > 253 or not _SUBDOMAIN.match(name):
        out.append("name: %r is not a DNS subdomain (lowercase letters, digits, '-' and '.')" % (name,))
    if not _whole(precedence) or not 1 <= precedence < SERVICE_ACCOUNTS_PRECEDENCE:
        out.append("matching_precedence: %r is not in 1..%d (it must come before the suggested service-accounts "
                   "FlowSchema, %d, to catch the agents)" % (precedence, SERVICE_ACCOUNTS_PRECEDENCE - 1,
                                                             SERVICE_ACCOUNTS_PRECEDENCE))
    if not _whole(shares) or shares < 1:
        out.append("nominal_concurrency_shares: %r is not a whole number of 1 or more" % (shares,))
    for what, value in (("lendable_percent", lendable), ("borrowing_limit_percent", borrowing)):
        if value is not None and (not _whole(value) or not 0 <= value <= 100):
            out.append("%s: %r is not in 0..100" % (what, value))
    if not _whole(queues) or queues < 1:
        out.append("queues: %r is not a whole number of 1 or more" % (queues,))
    if not _whole(hand_size) or hand_size < 1:
        out.append("hand_size: %r is not a whole number of 1 or more" % (hand_size,))
    elif _whole(queues) and queues >= 1:
        if hand_size > queues:
            out.append("hand_size: %d is more than queues (%d)" % (hand_size, queues))
        elif _entropy(queues, hand_size) > MAX_ENTROPY_BITS:
            out.append("hand_size: %d of %d queues needs %d bits of shuffle-shard entropy, more than the API server's "
                       "%d" % (hand_size, queues, _entropy(queues, hand_size), MAX_ENTROPY_BITS))
    if not _whole(queue_length) or queue_length < 1:
        out.append("queue_length_limit: %r is not a whole number of 1 or more" % (queue_length,))
    if not isinstance(agents, list) or not agents:
        out.append("agents: give at least one {name, namespace} service account")
        agents = []
    seen = set()
    for i, agent in enumerate(agents):
        if not isinstance(agent, dict) or set(agent) - {"name", "namespace"} or not agent.get("name") \
                or not agent.get("namespace"):
            out.append("agents[%d]: %r is not {name, namespace}" % (i, agent))
            continue
        if agent["name"] != "*" and (len(agent["name"]) > 253 or not _SUBDOMAIN.match(agent["name"])):
            out.append("agents[%d].name: %r is not a service account name (or *)" % (i, agent["name"]))
        if len(agent["namespace"]) > 63 or not _LABEL.match(agent["namespace"]):
            out.append("agents[%d].namespace: %r is not a namespace name" % (i, agent["namespace"]))
        key = (agent["namespace"], agent["name"])
        if key in seen:
            out.append("agents[%d]: %s/%s is listed twice" % (i, key[0], key[1]))
        seen.add(key)
    return [prefix + p for p in out]


def _entropy(queues, hand_size):
    """The shuffle-shard entropy the API server requires of a deck of `queues` and a hand of `hand_size`
    (shufflesharding.requiredEntropyBits: ceil(log2(deck) * hand))."""
    return int(math.ceil(math.log2(queues) * hand_size))


def objects(name, precedence, shares, lendable, borrowing, queues, hand_size, queue_length, agents):
    """The PriorityLevelConfiguration and the FlowSchema (both named `name`) for the agents' service accounts: every
    request of theirs (resources in every namespace and cluster-wide, and non-resource URLs), one flow per user."""
    limited = {"nominalConcurrencyShares": shares,
               "limitResponse": {"type": "Queue", "queuing": {"queues": queues, "handSize": hand_size,
                                                              "queueLengthLimit": queue_length}}}
    if lendable is not None:
        limited["lendablePercent"] = lendable
    if borrowing is not None:
        limited["borrowingLimitPercent"] = borrowing
    level = {"apiVersion": API, "kind": "PriorityLevelConfiguration", "metadata": {"name": name},
             "spec": {"type": "Limited", "limited": limited}}
    subjects = [{"kind": "ServiceAccount", "serviceAccount": {"name": a["name"], "namespace": a["namespace"]}}
                for a in agents]
    schema = {"apiVersion": API, "kind": "FlowSchema", "metadata": {"name": name},
              "spec": {"priorityLevelConfiguration": {"name": name}, "matchingPrecedence": precedence,
                       "distinguisherMethod": {"type": "ByUser"},
                       "rules": [{"subjects": subjects,
                                  "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                                     "clusterScope": True, "namespaces": ["*"]}],
                                  "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}}
    return [level, schema]
