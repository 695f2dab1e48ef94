"""The DNS Deployment's spread over hosts: which nodes count, required vs preferred, other terms kept."""

import copy

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils.kube import dns_spread as d

SEL = {"k8s-app": "kube-dns"}
TERM = {"labelSelector": {"matchLabels": SEL}, "topologyKey": "kubernetes.io/hostname"}
ANTI = "podAntiAffinity"


def deployment(replicas=2, pod_spec=None):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "coredns", "namespace": "kube-system"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": dict(SEL)},
                     "template": {"metadata": {"labels": dict(SEL)},
                                  "spec": pod_spec or {"containers": [{"name": "coredns"}]}}}}


def nodes(n, **extra):
    out = []
    for i in range(n):
        node = {"metadata": {"name": "n%d" % i, "labels": {"kubernetes.io/hostname": "n%d" % i,
                                                           "kubernetes.io/os": "linux"}}, "spec": {}}
        for key, value in extra.items():
            node["spec" if key in ("taints", "unschedulable") else "metadata"][key] = value
        out.append(node)
    return out


def anti(plan):
    return plan["patch"]["spec"]["template"]["spec"]["affinity"][ANTI]


def test_required_when_every_replica_fits_on_a_node_of_its_own():
    p = d.plan(deployment(10), nodes(10))
    assert (p["rule"], p["replicas"], p["schedulable"], p["selector"]) == ("required", 10, 10, SEL)
    assert anti(p) == {d.REQUIRED: [TERM], d.PREFERRED: None}


def test_preferred_when_there_are_fewer_nodes_than_replicas():
    p = d.plan(deployment(10), nodes(3), weight=80)
    assert p["rule"] == "preferred"
    assert anti(p) == {d.REQUIRED: None, d.PREFERRED: [{"weight": 80, "podAffinityTerm": TERM}]}


def test_cordoned_tainted_and_unselected_nodes_do_not_count():
    spec = {"nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"},
                            {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}],
            "affinity": {"nodeAffinity": {d.REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "pool", "operator": "NotIn", "values": ["gpu"]}]}]}}}}
    fleet = nodes(2)
    fleet += nodes(1, unschedulable=True)
    fleet += nodes(1, taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
    fleet += nodes(1, taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}])
    fleet += nodes(1, taints=[{"key": "example", "effect": "PreferNoSchedule"}])
    fleet += nodes(1, labels={"kubernetes.io/os": "windows"})
    fleet += nodes(1, labels={"kubernetes.io/os": "linux", "pool": "gpu"})
    p = d.plan(deployment(4, spec), fleet)
    # the 2 plain nodes, the tolerated control-plane taint and the PreferNoSchedule one
    assert p["schedulable"] == 4 and p["rule"] == "required"
    assert d.plan(deployment(5, spec), fleet)["rule"] == "preferred"


def test_other_terms_are_kept_and_the_rule_moves_between_lists():
    other_req = {"labelSelector": {"matchLabels": {"app": "other"}}, "topologyKey": "kubernetes.io/hostname"}
    zone = {"labelSelector": {"matchLabels": SEL}, "topologyKey": "topology.kubernetes.io/zone"}
    other_pref = {"weight": 5, "podAffinityTerm": zone}
    spec = {"affinity": {"nodeAffinity": {"x": 1}, ANTI: {d.REQUIRED: [other_req, TERM],
                                                          d.PREFERRED: [other_pref]}}}
    dep = deployment(10, spec)
    before = copy.deepcopy(dep)
    p = d.plan(dep, nodes(3))
    assert dep == before  # the live object is not changed
    aff = p["patch"]["spec"]["template"]["spec"]["affinity"]
    assert aff["nodeAffinity"] == {"x": 1}
    assert aff[ANTI] == {d.REQUIRED: [other_req], d.PREFERRED: [other_pref, {"weight": 100, "podAffinityTerm": TERM}]}
    # applied, then planned again with enough nodes: back to required, nothing doubled
    dep["spec"]["template"]["spec"]["affinity"] = aff
    again = d.plan(dep, nodes(10))
    assert anti(again) == {d.REQUIRED: [other_req, TERM], d.PREFERRED: [other_pref]}


def test_the_plan_of_an_applied_plan_is_the_same_patch():
    dep = deployment(10)
    p = d.plan(dep, nodes(12))
    dep["spec"]["template"]["spec"]["affinity"] = {ANTI: {d.REQUIRED: [TERM]}}
    assert d.plan(dep, nodes(12))["patch"] == p["patch"]


def test_topology_spread_is_added_once_and_others_kept():
    other = {"maxSkew": 2, "topologyKey": "x", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": SEL}}
    dep = deployment(3, {"topologySpreadConstraints": [other]})
    ts = {"topology_key": "topology.kubernetes.io/zone", "max_skew": 1}
    p = d.plan(dep, nodes(3), topology_spread=ts)
    tsc = p["patch"]["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert tsc == [other, {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                           "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": SEL}}]
    dep["spec"]["template"]["spec"]["topologySpreadConstraints"] = tsc
    assert d.plan(dep, nodes(3), topology_spread=ts)["patch"] == p["patch"]
    assert "topologySpreadConstraints" not in d.plan(dep, nodes(3))["patch"]["spec"]["template"]["spec"]
    # A role passes its settings whole: enabled false (also as Jinja's string) adds no constraint.
    for off in (False, "False", "no"):
        off_plan = d.plan(deployment(3), nodes(3), topology_spread=dict(ts, enabled=off))
        assert "topologySpreadConstraints" not in off_plan["patch"]["spec"]["template"]["spec"]
    assert d.plan(dep, nodes(3), topology_spread=dict(ts, enabled="true"))["patch"] == p["patch"]


def test_forced_modes_and_a_replica_count_to_judge_by():
    assert d.plan(deployment(10), nodes(3), mode="required")["rule"] == "required"
    assert d.plan(deployment(2), nodes(3), mode="preferred")["rule"] == "preferred"
    assert d.plan(deployment(2), nodes(3), replicas=5)["rule"] == "preferred"


@pytest.mark.parametrize("kw,message", [
    (dict(mode="always"), "mode 'always' is not one of auto, required, preferred"),
    (dict(weight=0), "weight 0 is not in 1..100"),
    (dict(weight=101), "weight 101 is not in 1..100"),
])
def test_bad_settings(kw, message):
    with pytest.raises(d.SpreadError, match=message.replace("(", r"\(").replace(")", r"\)")):
        d.plan(deployment(), nodes(1), **kw)


def test_a_selector_with_expressions_or_none_is_refused():
    dep = deployment()
    dep["spec"]["selector"] = {"matchExpressions": [{"key": "k8s-app", "operator": "Exists"}]}
    with pytest.raises(d.SpreadError, match="not matchLabels only"):
        d.plan(dep, nodes(1))
    with pytest.raises(d.SpreadError, match="not a Deployment"):
        d.plan({"kind": "StatefulSet"}, nodes(1))


def test_the_budget_selects_the_deployments_pods():
    assert d.pdb(deployment(), "coredns", 1) == {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "coredns", "namespace": "kube-system"},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": SEL}}}


def test_kubeadms_own_preferred_term_is_replaced_not_doubled():
    kubeadm = {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchExpressions": [
        {"key": "k8s-app", "operator": "In", "values": ["kube-dns"]}]}, "topologyKey": "kubernetes.io/hostname"}}
    dep = deployment(2, {"affinity": {ANTI: {d.PREFERRED: [kubeadm]}}})
    assert anti(d.plan(dep, nodes(5))) == {d.REQUIRED: [TERM], d.PREFERRED: None}


def test_the_budget_patch_sets_max_unavailable_drops_min_available_and_foreign_labels():
    have = {"spec": {"minAvailable": 1, "selector": {"matchLabels": {"k8s-app": "kube-dns", "old": "x"}}}}
    assert d.pdb_patch(d.pdb(deployment(), "coredns", "25%"), have) == {"spec": {
        "maxUnavailable": "25%", "minAvailable": None,
        "selector": {"matchLabels": {"k8s-app": "kube-dns", "old": None}, "matchExpressions": None}}}
    # a budget that is already right gets the same values back (the API server stores nothing new)
    right = {"spec": {"maxUnavailable": 1, "selector": {"matchLabels": SEL}}}
    assert d.pdb_patch(d.pdb(deployment(), "coredns", 1), right)["spec"]["selector"]["matchLabels"] == SEL


def test_the_diff_shows_the_pod_templates_affinity_and_constraints_only():
    dep = deployment(2, {"containers": [{"name": "coredns"}], "affinity": {ANTI: {d.REQUIRED: [TERM]}},
                         "topologySpreadConstraints": [{"maxSkew": 1}]})
    assert d.template_fields(dep) == {"affinity": {ANTI: {d.REQUIRED: [TERM]}},
                                      "topologySpreadConstraints": [{"maxSkew": 1}]}
    assert d.template_fields(deployment()) == {}


@pytest.mark.parametrize("value,want", [(1, 1), ("3", 3), (" 25% ", "25%"), ("100%", "100%"), ("07", 7)])
def test_max_unavailable_a_count_or_a_percentage(value, want):
    assert d.max_unavailable(value) == want


@pytest.mark.parametrize("value", [0, "0", "0%", "101%", "-1", "a", True, None, 1.5, "%"])
def test_max_unavailable_refuses_what_would_block_drains_or_is_no_number(value):
    with pytest.raises(d.SpreadError, match="count of 1 or more or a percentage|not a count"):
        d.max_unavailable(value)
