# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin of kubescale.tuning.audit_report: the fleet audit's verdicts and report, on the controller."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible.plugins.action import ActionBase

from ansible_collections.kubescale.tuning.plugins.module_utils.audit import html as _audit_html
from ansible_collections.kubescale.tuning.plugins.module_utils.audit import report as _audit
from ansible_collections.kubescale.tuning.plugins.module_utils.node.atomic import atomic_write


def _plain(value):
    """Builtin types only (registered results may carry Ansible's tagged subclasses)."""
    return json.loads(json.dumps(value, default=str))


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        _spec, args = self.validate_argument_spec(argument_spec=_audit.ARGUMENT_SPEC)
        unknown = sorted(set(args["thresholds"]) - set(_audit.DEFAULT_THRESHOLDS))
        if unknown:
            result.update(failed=True, msg="thresholds: unknown key(s) %s; allowed: %s"
                          % (", ".join(unknown), ", ".join(sorted(_audit.DEFAULT_THRESHOLDS))))
            return result
        hostvars = task_vars["hostvars"]
        nodes = {}
        for host in args["hosts"]:
            hv = hostvars[host]
            node_class = hv.get("kubescale_node_class")
            observed = None
            if hv.get("__fleet_audit_done"):
                facts = hv.get("ansible_local") or {}
                observed = dict((name, _plain(hv.get("__fleet_audit_" + name))) for name in _audit.NAMES)
                observed["facts"] = _plain(dict((k, v) for k, v in facts.items() if k.startswith("kubescale_")))
            nodes[host] = (node_class, _audit.evaluate(host, node_class, observed, args["thresholds"]))
        doc = _audit.document(nodes, args["thresholds"], check_mode=bool(task_vars.get("ansible_check_mode")))
        directory = args["dir"]
        os.makedirs(directory, exist_ok=True)
        json_path, html_path = os.path.join(directory, "audit.json"), os.path.join(directory, "audit.html")
        atomic_write(json_path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
        atomic_write(html_path, _audit_html.render(doc))
        red = ["%s %s/%s: %s" % (c["node"], c["area"], c["check"], c["message"])
               for c in doc["failing"] if c["status"] == "red"]
        result.update(changed=False, json=json_path, html=html_path, totals=doc["totals"], classes=doc["classes"],
                      red=red)
        if red and args["fail_on_red"]:
            result.update(failed=True, msg="%d red check(s) on %d node(s), report in %s: %s%s"
                          % (len(red), doc["totals"]["red"], html_path, "; ".join(red[:10]),
                             " ..." if len(red) > 10 else ""))
        else:
            result["msg"] = "%(nodes)d nodes: %(green)d green, %(amber)d amber, %(red)d red" % doc["totals"]
        return result
