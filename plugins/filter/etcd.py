# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: etcd_bytes
short_description: A size with a unit (8GiB, 8Gi, 8G, 8589934592) as bytes, the way etcd's flags take it
version_added: "0.4.0"
description:
  - K, M, G, T (and KB, MB, GB, TB) are powers of 1000; Ki, Mi, Gi, Ti (and KiB, MiB, GiB, TiB) powers of 1024;
    a bare number is bytes. Anything else, zero or a negative size fails.
author:
  - kubescale.tuning contributors (@kubescale)
positional: _input
options:
  _input:
    description: The size.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: etcd's quota in bytes
  ansible.builtin.debug:
    msg: "{{ '8GiB' | kubescale.tuning.etcd_bytes }}"  # 8589934592
"""

RETURN = r"""
_value:
  description: Bytes.
  type: int
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.kubescale.tuning.plugins.plugin_utils._lazy import LazyModule

_etcd = LazyModule("module_utils.etcd.cluster")  # imported at the first call, not with this file
_pod = LazyModule("module_utils.kube.static_pod")  # imported at the first call, not with this file


def etcd_bytes(value):
    try:
        return _etcd.parse_bytes(value)
    except ValueError as exc:
        raise AnsibleFilterError("etcd_bytes: %s" % exc) from exc


def etcd_bytes_error(value):
    """'' when `value` is a size etcd_bytes accepts, else the reason (for validation messages)."""
    try:
        _etcd.parse_bytes(value)
    except ValueError as exc:
        return str(exc)
    return ""


def etcd_overrides_servers(existing, resource):
    """The servers --etcd-servers-overrides names for `resource` (e.g. /events); [] when it names none."""
    try:
        for res, urls in _pod.parse_overrides(existing or ""):
            if res == resource:
                return list(urls)
    except _pod.PodError as exc:
        raise AnsibleFilterError("etcd_overrides_servers: %s" % exc) from exc
    return []


class FilterModule(object):
    def filters(self):
        return {"etcd_bytes": etcd_bytes, "etcd_bytes_error": etcd_bytes_error,
                "etcd_overrides_servers": etcd_overrides_servers}
