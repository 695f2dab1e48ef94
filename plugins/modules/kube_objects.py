#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: kube_objects
short_description: Create or update the API objects this collection keeps in a cluster, all of them in one call
version_added: "0.5.0"
description:
  - Runs where the Kubernetes Python client is (the controller, with C(delegate_to=localhost)) and applies every object
    of O(objects) in one process, where a role looped C(kubernetes.core.k8s) over them (a process, a client and its
    configuration per object).
  - A missing object is created; an existing one gets its C(spec) as a JSON merge patch (fields the object has and
    the given one does not name are kept, lists replaced whole).
  - Every object's change is first sent as a server-side dry run, and what the API server would store compared with
    what it has. Only when every object was accepted are the changes sent for real, so an object the API server
    refuses leaves the others as they were, a second run sends nothing, and check mode reports exactly what a real
    run changes, with a diff of each changed object's spec.
  - Kinds (refused otherwise, before anything is sent) - C(policy/v1) PodDisruptionBudget,
    C(flowcontrol.apiserver.k8s.io/v1) PriorityLevelConfiguration and FlowSchema.
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
  objects:
    description: The objects, as the API takes them (C(apiVersion), C(kind), C(metadata.name), and
      C(metadata.namespace) for a namespaced kind).
    type: list
    elements: dict
    required: true
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
seealso:
  - module: kubernetes.core.k8s
  - module: kubescale.tuning.dns_spread
"""

EXAMPLES = r"""
- name: Apply the node agents' PriorityLevelConfiguration and FlowSchema
  kubescale.tuning.kube_objects:
    kubeconfig: /etc/kubernetes/admin.conf
    objects: "{{ 'kubescale-node-agents' | kubescale.tuning.apf_objects(precedence=850, shares=10, lendable=0,
               borrowing=None, queues=16, hand_size=4, queue_length=50, agents=[{'name': 'fluentd', 'namespace': 'logging'}]) }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
objects:
  description: Each object, as C(Kind namespace/name) or C(Kind name), with whether it is created or changed (in check
    mode, would be).
  returned: always
  type: list
  elements: dict
  sample: [{"object": "FlowSchema kubescale-node-agents", "changed": false, "created": false}]
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.kubescale.tuning.plugins.module_utils.kube import api as kube


def main():
    module = AnsibleModule(
        argument_spec=dict(
            kubeconfig=dict(type="path", default=""),
            context=dict(type="str", default=""),
            objects=dict(type="list", elements="dict", required=True),
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["timeout"] < 1:
        module.fail_json(msg="timeout (%s) must be 1 or more" % p["timeout"])
    try:
        for index, obj in enumerate(p["objects"]):
            try:
                kube.kind_of(obj)
            except kube.KubeError as exc:
                raise kube.KubeError("objects[%d]: %s" % (index, exc)) from None
    except kube.KubeError as exc:
        module.fail_json(msg="%s. Nothing was sent." % exc)
    if not kube.HAS_K8S:
        module.fail_json(msg=missing_required_lib("kubernetes"), exception=kube.K8S_IMPORT_ERROR)
    try:
        api = kube.api_client(p["kubeconfig"], p["context"])
    except kube.KubeError as exc:
        module.fail_json(msg=str(exc))
    changes, step = [], None
    try:
        for obj in p["objects"]:
            step = "%s (dry run)" % kube.label(obj)
            changes.append(kube.plan(api, obj, p["timeout"]))
        if not module.check_mode:
            kube.send(changes, p["timeout"])
    except kube.SendError as exc:
        module.fail_json(msg=str(exc))
    except Exception as exc:  # pylint: disable=broad-except  # the API's refusals, urllib3's connection and TLS errors
        module.fail_json(msg=kube.failure(step, exc))
    result = dict(changed=any(c.changed for c in changes),
                  objects=[dict(object=c.label, changed=c.changed, created=c.have is None) for c in changes])
    if module._diff:
        result["diff"] = [c.diff() for c in changes if c.changed]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
