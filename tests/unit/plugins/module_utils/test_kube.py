"""The API objects the controller-side modules keep: which kinds, how they are named, what a change is judged by."""

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils.kube import api as k

PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
       "metadata": {"name": "coredns", "namespace": "kube-system"},
       "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"k8s-app": "kube-dns"}}}}
LEVEL = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
         "metadata": {"name": "agents"}, "spec": {"type": "Limited"}}


def test_the_kinds_and_their_client_calls():
    assert k.kind_of(PDB) == ("PolicyV1Api", "pod_disruption_budget", True)
    assert k.kind_of(LEVEL) == ("FlowcontrolApiserverV1Api", "priority_level_configuration", False)
    assert k.label(PDB) == "PodDisruptionBudget kube-system/coredns"
    assert k.label(LEVEL) == "PriorityLevelConfiguration agents"


@pytest.mark.parametrize("obj,message", [
    (dict(PDB, apiVersion="policy/v1beta1"), "policy/v1beta1/PodDisruptionBudget is not a kind this collection"),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, "v1/ConfigMap is not a kind"),
    (dict(LEVEL, metadata={}), "a PriorityLevelConfiguration without metadata.name"),
    (dict(PDB, metadata={"name": "coredns"}), "PodDisruptionBudget coredns without metadata.namespace"),
])
def test_other_kinds_and_unnamed_objects_are_refused(obj, message):
    with pytest.raises(k.KubeError, match=message):
        k.kind_of(obj)


class Call(object):
    def __init__(self):
        self.calls = []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))


def test_a_change_is_judged_by_the_spec_the_server_would_store():
    stored = dict(PDB, metadata=dict(PDB["metadata"], resourceVersion="2", generation=2), status={"x": 1})
    same = k.Change(PDB, dict(stored, metadata=dict(stored["metadata"], resourceVersion="1")), stored, Call(), (), {})
    assert not same.changed  # metadata and status move on their own
    call = Call()
    new = k.Change(PDB, None, stored, call, ("kube-system", PDB), {})
    assert new.changed and new.diff() == {
        "before": {}, "after": {"spec": PDB["spec"]}, "before_header": "PodDisruptionBudget kube-system/coredns (none)",
        "after_header": "PodDisruptionBudget kube-system/coredns"}
    new.write(7)
    assert call.calls == [(("kube-system", PDB), {"_preload_content": False, "_request_timeout": 7})]
    moved = k.Change(PDB, dict(stored, spec={"minAvailable": 1}), stored, Call(), (), {})
    assert moved.changed and moved.diff()["before"] == {"spec": {"minAvailable": 1}}


def test_the_api_servers_own_words_for_a_refusal():
    exc = k.ApiException()
    exc.status, exc.reason = 422, "Unprocessable Entity"
    exc.body = '{"kind": "Status", "message": "spec.maxUnavailable: Invalid value"}'
    assert k.api_error(exc) == "HTTP 422 spec.maxUnavailable: Invalid value"
    exc.body = "not json"
    assert k.api_error(exc) == "HTTP 422 Unprocessable Entity"


class Refused(Call):
    def __call__(self, *args, **kwargs):
        exc = k.ApiException()
        exc.status, exc.reason, exc.body = 422, "Unprocessable Entity", '{"message": "spec: Invalid value"}'
        raise exc


def test_only_changes_are_sent_in_turn_and_a_refusal_names_what_was_sent_before_it():
    level_call, same_call, pdb_call = Call(), Call(), Refused()
    stored = dict(LEVEL, spec={"type": "Exempt"})
    changes = [k.Change(LEVEL, LEVEL, stored, level_call, ("agents", {}), {}),
               k.Change(PDB, PDB, PDB, same_call, (), {}),
               k.Change(PDB, None, PDB, pdb_call, ("kube-system", PDB), {})]
    with pytest.raises(k.SendError) as err:
        k.send(changes, 5)
    assert str(err.value) == ("PodDisruptionBudget kube-system/coredns: HTTP 422 spec: Invalid value. Sent before it: "
                              "PriorityLevelConfiguration agents.")
    assert len(level_call.calls) == 1 and same_call.calls == []
    assert k.send(changes[:2], 5) == ["PriorityLevelConfiguration agents"]


def test_a_failure_before_anything_was_sent_says_so():
    assert k.failure("FlowSchema agents (dry run)", OSError("connection refused")) == \
        "FlowSchema agents (dry run): connection refused. Nothing was sent."


def test_a_change_can_show_other_fields_than_the_spec():
    have = {"kind": "Deployment", "metadata": {"name": "coredns", "namespace": "kube-system"},
            "spec": {"replicas": 2, "template": {"spec": {"affinity": {"a": 1}}}}}
    stored = dict(have, spec={"replicas": 2, "template": {"spec": {"affinity": {"a": 2}}}})
    change = k.Change(have, have, stored, Call(), (), {},
                      shown=lambda obj: obj["spec"]["template"]["spec"])
    assert change.changed and change.diff() == {"before": {"affinity": {"a": 1}}, "after": {"affinity": {"a": 2}},
                                                "before_header": "Deployment kube-system/coredns",
                                                "after_header": "Deployment kube-system/coredns"}
