# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The x509_due filter (documented in x509_due.yml): plugin_utils/_x509.py decides."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.kubescale.tuning.plugins.plugin_utils._lazy import LazyModule

_x509 = LazyModule("plugin_utils._x509")  # imported at the first call, not with this file


def x509_due(cert, key, issuer=None, common_name=None, sans=None, key_usage=None, extended_key_usage=None, ca=False):
    try:
        return _due(cert, key, issuer, common_name, sans, key_usage, extended_key_usage, ca)
    except RuntimeError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def _due(cert, key, issuer, common_name, sans, key_usage, extended_key_usage, ca):
    return _x509.due(str(cert), str(key), issuer_path=str(issuer) if issuer else None, common_name=common_name,
                     sans=list(sans) if sans is not None else None,
                     key_usage=list(key_usage) if key_usage is not None else None,
                     extended_key_usage=list(extended_key_usage) if extended_key_usage is not None else None,
                     ca=bool(ca))


class FilterModule(object):
    def filters(self):
        return {"x509_due": x509_due}
