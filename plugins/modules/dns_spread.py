#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: dns_spread
short_description: Spread the cluster DNS Deployment's pods over hosts (pod anti-affinity) and keep a disruption budget
version_added: "0.5.0"
description:
  - Runs where the Kubernetes Python client is (the controller, with C(delegate_to=localhost)) and talks to the API
    server in one process.
  - Reads the Deployment and every Node (in pages of O(page_size); only the count of Nodes its pods may run on leaves
    the module, so a 2,500-node cluster's Node list never passes through Ansible's results and variables).
  - Decides the rule - required anti-affinity
    on C(kubernetes.io/hostname) when every replica fits on a node of its own, else preferred - and sends the
    strategic merge patch that sets it, every other affinity term, constraint and field kept.
  - With O(pdb), a C(policy/v1) PodDisruptionBudget of the Deployment's name that keeps at most
    O(pdb_max_unavailable) of its pods down at once (a budget with C(minAvailable) is moved to C(maxUnavailable)).
  - Every change is first sent as a server-side dry run; what the API server would store is compared with what it
    has, so a second run writes nothing, and check mode reports exactly what a real run would change, with a diff of
    the pod template's affinity and topology spread constraints and of the budget's spec.
  - A missing Deployment fails with RV(missing) true before anything is written.
author:
  - kubescale.tuning contributors (@kubescale)
requirements:
  - kubernetes (the Kubernetes Python client) on the host that runs it
options:
  kubeconfig:
    description: The kubeconfig file; empty uses the client's default (C(KUBECONFIG), C(~/.kube/config)), then the
      in-cluster service account.
    type: path
    default: ""
  context:
    description: The kubeconfig context; empty uses the current one.
    type: str
    default: ""
  namespace:
    description: The Deployment's namespace.
    type: str
    default: kube-system
  name:
    description: The cluster DNS Deployment's name.
    type: str
    default: coredns
  mode:
    description: V(auto) (required when the replicas fit one per node, else preferred), V(required) or V(preferred).
    type: str
    choices: [auto, required, preferred]
    default: auto
  weight:
    description: The preferred rule's weight, 1..100.
    type: int
    default: 100
  topology_spread:
    description:
      - A topology spread constraint too, when C(enabled) is true (the default).
    type: dict
    suboptions:
      enabled:
        description: Whether to add the constraint.
        type: bool
        default: true
      topology_key:
        description: The node label to spread over.
        type: str
        default: topology.kubernetes.io/zone
      max_skew:
        description: maxSkew, 1 or more.
        type: int
        default: 1
      when_unsatisfiable:
        description: C(ScheduleAnyway) or C(DoNotSchedule).
        type: str
        choices: [ScheduleAnyway, DoNotSchedule]
        default: ScheduleAnyway
  pdb:
    description: Whether to keep the PodDisruptionBudget.
    type: bool
    default: true
  pdb_max_unavailable:
    description: The budget's maxUnavailable, a count of 1 or more or a percentage (V(25%)).
    type: raw
    default: 1
  page_size:
    description: How many Nodes to ask for per request.
    type: int
    default: 500
  timeout:
    description: Seconds each API request may take.
    type: int
    default: 30
extends_documentation_fragment:
  - kubescale.tuning.attributes
attributes:
  check_mode:
    support: full
    details: Each change is sent as a server-side dry run only; what the API server would store is reported.
  diff_mode:
    support: full
  platform:
    platforms: all
notes:
  - The rule judges a node by its own fields (cordon, the pod template's nodeSelector and required node affinity,
    NoSchedule and NoExecute taints), not by its free resources; the DNS pods are small.
seealso:
  - module: kubernetes.core.k8s
"""

EXAMPLES = r"""
- name: Spread the cluster DNS pods, one per node where they fit
  kubescale.tuning.dns_spread:
    kubeconfig: /etc/kubernetes/admin.conf
    namespace: kube-system
    name: coredns
  delegate_to: localhost
  run_once: true
  register: dns

- name: Say which rule applies
  ansible.builtin.debug:
    msg: "{{ dns.plan.replicas }} replicas on {{ dns.plan.schedulable }} nodes: {{ dns.plan.rule }}"
"""

RETURN = r"""
plan:
  description: The rule, the replica count, the Nodes the pods may run on, the Deployment's selector, and the strategic
    merge patch of the Deployment.
  returned: when the Deployment exists
  type: dict
  sample: {"rule": "required", "replicas": 2, "schedulable": 50, "selector": {"k8s-app": "kube-dns"}, "patch": {}}
nodes:
  description: How many Nodes the cluster has.
  returned: when the Deployment exists
  type: int
  sample: 2500
deployment_changed:
  description: Whether the Deployment's pod template changes (in check mode, would change).
  returned: when the Deployment exists
  type: bool
pdb_changed:
  description: Whether the PodDisruptionBudget is created or changed (in check mode, would be).
  returned: when the Deployment exists
  type: bool
missing:
  description: True when the Deployment does not exist (the call fails, nothing written).
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.kubescale.tuning.plugins.module_utils.kube import api as kube
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.dns_spread import (
    SpreadError,
    max_unavailable,
    pdb_patch,
    plan,
    template_fields,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.kube.dns_spread import pdb as pdb_object


def list_nodes(core, page_size, timeout):
    nodes, token = [], None
    while True:
        page = kube.data(core.list_node(limit=page_size, _continue=token, _preload_content=False,
                                        _request_timeout=timeout))
        nodes.extend(page.get("items") or [])
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return nodes


def main():
    module = AnsibleModule(
        argument_spec=dict(
            kubeconfig=dict(type="path", default=""),
            context=dict(type="str", default=""),
            namespace=dict(type="str", default="kube-system"),
            name=dict(type="str", default="coredns"),
            mode=dict(type="str", default="auto", choices=["auto", "required", "preferred"]),
            weight=dict(type="int", default=100),
            topology_spread=dict(type="dict", options=dict(
                enabled=dict(type="bool", default=True),
                topology_key=dict(type="str", default="topology.kubernetes.io/zone", no_log=False),
                max_skew=dict(type="int", default=1),
                when_unsatisfiable=dict(type="str", default="ScheduleAnyway",
                                        choices=["ScheduleAnyway", "DoNotSchedule"]))),
            pdb=dict(type="bool", default=True),
            pdb_max_unavailable=dict(type="raw", default=1),
            page_size=dict(type="int", default=500),
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        p["pdb_max_unavailable"] = max_unavailable(p["pdb_max_unavailable"])
    except SpreadError as exc:
        module.fail_json(msg="pdb_max_unavailable: %s" % exc, missing=False)
    for opt, low, high in (("weight", 1, 100), ("page_size", 1, None), ("timeout", 1, None)):
        if p[opt] < low or (high is not None and p[opt] > high):
            module.fail_json(msg="%s (%s) must be %s" % (opt, p[opt], "in %d..%d" % (low, high) if high
                                                         else "%d or more" % low), missing=False)
    if p["topology_spread"] and p["topology_spread"]["max_skew"] < 1:
        module.fail_json(msg="topology_spread.max_skew (%s) must be 1 or more" % p["topology_spread"]["max_skew"],
                         missing=False)
    if not kube.HAS_K8S:
        module.fail_json(msg=missing_required_lib("kubernetes"), exception=kube.K8S_IMPORT_ERROR, missing=False)
    ns, name, timeout = p["namespace"], p["name"], p["timeout"]
    where = "%s/%s" % (ns, name)
    try:
        api = kube.api_client(p["kubeconfig"], p["context"])
    except kube.KubeError as exc:
        module.fail_json(msg=str(exc), missing=False)
    apps, core = kube.k8s_client.AppsV1Api(api), kube.k8s_client.CoreV1Api(api)
    step = "reading Deployment %s" % where
    try:
        try:
            deployment = kube.data(apps.read_namespaced_deployment(name, ns, _preload_content=False,
                                                                   _request_timeout=timeout))
        except kube.ApiException as exc:
            if exc.status == 404:
                module.fail_json(msg="no Deployment %s. Nothing was changed." % where, missing=True)
            raise
        step = "listing the Nodes"
        nodes = list_nodes(core, p["page_size"], timeout)
        try:
            want = plan(deployment, nodes, mode=p["mode"], weight=p["weight"], topology_spread=p["topology_spread"])
        except SpreadError as exc:
            module.fail_json(msg="Deployment %s: %s. Nothing was changed." % (where, exc), missing=False)
        # Every change as a dry run first, the Deployment's and the budget's: what the API server would store, against
        # what it has. Nothing is sent for real until both were accepted.
        step = "Deployment %s (dry run)" % where
        spread = kube.patch({"kind": "Deployment", "metadata": {"name": name, "namespace": ns}}, deployment,
                            apps.patch_namespaced_deployment, (name, ns, want["patch"]), timeout,
                            content_type=kube.SMP, shown=template_fields)
        changes = [spread]
        if p["pdb"]:
            desired = pdb_object(deployment, name, p["pdb_max_unavailable"])
            step = "PodDisruptionBudget %s (dry run)" % where
            changes.append(kube.plan(api, desired, timeout, patch_for=lambda have: pdb_patch(desired, have)))
        if not module.check_mode:
            kube.send(changes, timeout)
    except kube.SendError as exc:
        module.fail_json(msg=str(exc), missing=False)
    except Exception as exc:  # pylint: disable=broad-except  # the API's refusals, urllib3's connection and TLS errors
        module.fail_json(msg=kube.failure(step, exc), missing=False)
    result = dict(changed=any(c.changed for c in changes), missing=False, plan=want, nodes=len(nodes),
                  deployment_changed=spread.changed, pdb_changed=len(changes) > 1 and changes[1].changed)
    if module._diff and result["changed"]:
        result["diff"] = [c.diff() for c in changes if c.changed]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
