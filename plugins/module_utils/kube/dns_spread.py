# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: spread the cluster DNS Deployment's pods over hosts (pod anti-affinity on kubernetes.io/hostname).

Decides, from the live Deployment and the live Nodes, which nodes its pods can be scheduled on (not cordoned, the
pod template's nodeSelector and required node affinity matched, every NoSchedule/NoExecute taint tolerated), whether
the rule can be required (replicas <= those nodes) or must be preferred, and the strategic merge patch that sets the
rule while keeping every other affinity term, constraint and field of the Deployment.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible.module_utils.parsing.convert_bool import boolean

HOSTNAME = "kubernetes.io/hostname"
MODES = ("auto", "required", "preferred")
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


class SpreadError(Exception):
    pass


def _match_expression(labels, expr):
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt"):
        try:
            have, want = int(labels.get(key)), int(values[0])
        except (TypeError, ValueError, IndexError):
            return False
        return have > want if op == "Gt" else have < want
    return False


def _tolerated(taint, tolerations):
    for tol in tolerations or []:
        if tol.get("effect") and tol.get("effect") != taint.get("effect"):
            continue
        if not tol.get("key"):
            if tol.get("operator") == "Exists":
                return True
            continue
        if tol.get("key") != taint.get("key"):
            continue
        if tol.get("operator") == "Exists" or tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def schedulable(node, pod_spec):
    """Whether a pod with `pod_spec` may be scheduled on `node` as far as the node's own fields decide (cordon,
    nodeSelector, required node affinity, taints); resources are not counted (the DNS pods are small)."""
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    labels = (node.get("metadata") or {}).get("labels") or {}
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    terms = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(REQUIRED) or {}).get(
        "nodeSelectorTerms") or []
    if terms and not any(all(_match_expression(labels, e) for e in t.get("matchExpressions") or [])
                         for t in terms):
        return False
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerated(taint,
                                                                                 pod_spec.get("tolerations")):
            return False
    return True


def _requirements(label_selector):
    """A label selector as a set of (key, operator, values): matchLabels k=v is (k, In, {v}), as the API reads it."""
    reqs = set()
    for key, value in ((label_selector or {}).get("matchLabels") or {}).items():
        reqs.add((key, "In", frozenset([value])))
    for expr in (label_selector or {}).get("matchExpressions") or []:
        reqs.add((expr.get("key"), expr.get("operator"), frozenset(expr.get("values") or [])))
    return reqs


def _ours(term, selector):
    """A hostname term that selects exactly the Deployment's pods, however written (kubeadm's CoreDNS has one with
    matchExpressions k8s-app In [kube-dns]): the rule replaces it rather than sitting beside it."""
    return term.get("topologyKey") == HOSTNAME and \
        _requirements(term.get("labelSelector")) == _requirements({"matchLabels": selector})


def plan(deployment, nodes, mode="auto", weight=100, topology_spread=None, replicas=None):
    """What to set on `deployment` (a Deployment object as the API returns it) given the cluster's `nodes`.

    Returns {rule: required|preferred, replicas, schedulable, selector, patch} where patch is the strategic merge
    patch of the Deployment (spec.template.spec.affinity and topologySpreadConstraints only: both lists are replaced
    whole by a strategic merge, so they carry every other term as it was). `topology_spread`: None, or
    {topology_key, max_skew, when_unsatisfiable, enabled (default true)}. `replicas`: the count to judge by (default the Deployment's).
    """
    if mode not in MODES:
        raise SpreadError("mode %r is not one of %s" % (mode, ", ".join(MODES)))
    if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
        raise SpreadError("weight %r is not in 1..100" % (weight,))
    if not isinstance(deployment, dict) or deployment.get("kind") not in (None, "Deployment"):
        raise SpreadError("not a Deployment")
    spec = deployment.get("spec") or {}
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    if not selector or (spec.get("selector") or {}).get("matchExpressions"):
        raise SpreadError("the Deployment's selector is not matchLabels only (found %r): the rule must select exactly "
                          "its pods" % (spec.get("selector"),))
    pod_spec = (spec.get("template") or {}).get("spec") or {}
    count = int(spec.get("replicas", 1) if replicas is None else replicas)
    fits = sum(1 for n in nodes if schedulable(n, pod_spec))
    rule = mode if mode != "auto" else ("required" if count <= fits else "preferred")
    affinity = copy.deepcopy(pod_spec.get("affinity") or {})
    anti = affinity.get("podAntiAffinity") or {}
    term = {"labelSelector": {"matchLabels": dict(selector)}, "topologyKey": HOSTNAME}
    required = [t for t in anti.get(REQUIRED) or [] if not _ours(t, selector)]
    preferred = [t for t in anti.get(PREFERRED) or [] if not _ours(t.get("podAffinityTerm") or {}, selector)]
    if rule == "required":
        required.append(term)
    else:
        preferred.append({"weight": weight, "podAffinityTerm": term})
    anti[REQUIRED] = required or None  # null removes the list in a strategic merge patch
    anti[PREFERRED] = preferred or None
    affinity["podAntiAffinity"] = anti
    template_patch = {"affinity": affinity}
    if topology_spread is not None and boolean(topology_spread.get("enabled", True), strict=True):
        key = topology_spread.get("topology_key") or "topology.kubernetes.io/zone"
        ours = {"matchLabels": selector}
        constraints = [c for c in pod_spec.get("topologySpreadConstraints") or []
                       if not (c.get("topologyKey") == key and (c.get("labelSelector") or {}) == ours)]
        constraints.append({"maxSkew": int(topology_spread.get("max_skew", 1)), "topologyKey": key,
                            "whenUnsatisfiable": topology_spread.get("when_unsatisfiable") or "ScheduleAnyway",
                            "labelSelector": {"matchLabels": dict(selector)}})
        template_patch["topologySpreadConstraints"] = constraints
    return {"rule": rule, "replicas": count, "schedulable": fits, "selector": dict(selector),
            "patch": {"spec": {"template": {"spec": template_patch}}}}


def pdb(deployment, name, max_unavailable):
    """A PodDisruptionBudget for the Deployment's pods (policy/v1)."""
    meta = deployment.get("metadata") or {}
    selector = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": meta.get("namespace")},
            "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": dict(selector)}}}


def pdb_patch(desired, have):
    """The JSON merge patch that makes the budget `have` (as the API returns it) the `desired` one: maxUnavailable set,
    minAvailable removed (a budget has one or the other), the selector's labels exactly the desired ones."""
    want = desired["spec"]["selector"]["matchLabels"]
    labels = dict((k, None) for k in (((have.get("spec") or {}).get("selector") or {}).get("matchLabels") or {})
                  if k not in want)
    labels.update(want)
    return {"spec": {"maxUnavailable": desired["spec"]["maxUnavailable"], "minAvailable": None,
                     "selector": {"matchLabels": labels, "matchExpressions": None}}}


def template_fields(deployment):
    """What the rule changes in a Deployment's pod template, for a diff: its affinity and topology spread constraints."""
    pod_spec = (((deployment.get("spec") or {}).get("template") or {}).get("spec") or {})
    return dict((key, pod_spec[key]) for key in ("affinity", "topologySpreadConstraints") if key in pod_spec)


def max_unavailable(value):
    """A budget's maxUnavailable as the API takes it: a count of 1 or more (an int, or its digits), or a percentage of
    1% to 100% (a string). 0 would block every drain."""
    if isinstance(value, bool):
        raise SpreadError("%r is not a count or a percentage" % (value,))
    text = str(value).strip()
    if text.endswith("%") and text[:-1].isdigit() and 1 <= int(text[:-1]) <= 100:
        return "%d%%" % int(text[:-1])
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise SpreadError("%r must be a count of 1 or more or a percentage like 25%%" % (value,))
