# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: the decisions of the kubescale.tuning.azure_rm inventory, as data (standard library only).

Which node class an Azure VM belongs to, which ARM answers are retried, which are tolerated and what an error says.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# ARM's transient answers: throttling, timeouts and server errors. Everything else that is not 200 is final.
RETRY_STATUSES = frozenset([408, 429, 500, 502, 503, 504])

# A Uniform scale set instance's NIC is served only under Network API 2018-10-01; azure_rm asks with its newer
# version first, gets 400 NoRegisteredProviderFound, and then reads the instance's NICs with the SDK at 2018-10-01.
_SCALE_SET_NIC = re.compile(r"/virtualMachineScaleSets/[^/]+/virtualMachines/[^/]+/networkInterfaces/[^/?]+", re.I)

DEFAULT_SIZE_CLASSES = [
    {"pattern": "Standard_D15_v2", "class": "kube_node_cpu"},
    # The GPU families: NC (compute), ND (deep learning), NV (visualisation), any generation and suffix.
    {"pattern": "Standard_N[CDV][0-9].*", "class": "kube_node_gpu"},
]


def tag_value(tags, name):
    """The value of `name` in `tags`, matched without regard to case as Azure does for tag names (and HTTP for
    header names)."""
    for key, value in (tags or {}).items():
        if key.lower() == name.lower():
            return value
    return None


def check_size_classes(rules):
    """Compiled (regex, class) pairs of `node_class_sizes`; ValueError naming the bad entry."""
    compiled = []
    for index, rule in enumerate(rules or []):
        if not isinstance(rule, dict) or set(rule) != {"pattern", "class"}:
            raise ValueError("node_class_sizes[%d] must be a mapping with exactly the keys pattern and class, got %r"
                             % (index, rule))
        if not isinstance(rule["class"], str) or not rule["class"]:
            raise ValueError("node_class_sizes[%d].class must be a non-empty string, got %r" % (index, rule["class"]))
        try:
            compiled.append((re.compile(rule["pattern"], re.I), rule["class"]))
        except (re.error, TypeError) as exc:
            raise ValueError("node_class_sizes[%d].pattern %r is not a regular expression: %s"
                             % (index, rule["pattern"], exc)) from None
    return compiled


def node_class(vm_tags, scale_set_tags, size, tag, size_classes):
    """(class, source) of a VM: its own `tag`, else its scale set's, else the first size rule matching the whole size.

    source is 'vm_tag', 'scale_set_tag' or 'size'; (None, None) when nothing decides (an empty tag value counts as no tag).
    """
    for source, tags in (("vm_tag", vm_tags), ("scale_set_tag", scale_set_tags)):
        value = tag_value(tags, tag)
        if value:
            return value, source
    for regex, cls in size_classes:
        if size and regex.fullmatch(size):
            return cls, "size"
    return None, None


def tolerated(url, status):
    """Whether a non-200 answer to `url` is one azure_rm expects and works around (see _SCALE_SET_NIC)."""
    return status == 400 and bool(_SCALE_SET_NIC.search(url or ""))


def retry_after(headers, default):
    """Seconds from a Retry-After header (case-insensitive; seconds form), else `default`."""
    value = tag_value(headers, "Retry-After")
    if value is None:
        return default
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return default


def describe_error(method, url, status, body):
    """One line for an ARM answer that is not a success: status, ARM's error code and message, the URL."""
    code = message = None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            code, message = error.get("code"), error.get("message")
        elif isinstance(error, str):
            code, message = error, body.get("error_description")
    text = "Azure answered HTTP %s to %s %s" % (status, method, url)
    if code or message:
        text += ": %s: %s" % (code, message)
    return text


def scale_set_of(vm_model, uniform_scale_set, known):
    """The scale set hostvar of a VM: {id, name, orchestration_mode, tags}, {} for a VM outside any scale set.

    `uniform_scale_set` is the scale set a Uniform instance was listed from; a Flexible instance names its scale set
    in properties.virtualMachineScaleSet.id; `known` maps lower-case scale set ids to the listed scale sets.
    """
    ref = uniform_scale_set or ((vm_model.get("properties") or {}).get("virtualMachineScaleSet") or {})
    ss_id = ref.get("id")
    if not ss_id:
        return {}
    listed = known.get(ss_id.lower()) or {}
    return {
        "id": listed.get("id", ss_id),
        "name": listed.get("name", ss_id.rstrip("/").rsplit("/", 1)[-1]),
        "orchestration_mode": (listed.get("properties") or {}).get("orchestrationMode"),
        "tags": listed.get("tags") or {},
        "sku": (listed.get("sku") or {}).get("name"),
    }


def duplicate_host_error(name, first_id, second_id):
    return ("azure_rm: two VMs have the inventory host name %r: %s and %s. Host names must be unique; add the resource "
            "group to `hostnames` (e.g. name ~ '.' ~ resource_group) or rename one." % (name, first_id, second_id))
