# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: flags of a static pod's container (kubeadm's manifests) and kube-apiserver's etcd overrides, as data."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_FLAG = re.compile(r"^--[A-Za-z0-9][A-Za-z0-9-]*$")


class PodError(Exception):
    pass


def check_flag(name):
    if not _FLAG.match(name or ""):
        raise PodError("%r is not a flag name (--name)" % (name,))


def find_container(pod, name=None):
    """The container named `name`, or the only/first one when no name is given."""
    if not isinstance(pod, dict) or pod.get("kind") != "Pod":
        raise PodError("not a Pod manifest (kind: %r)" % (pod.get("kind") if isinstance(pod, dict) else None,))
    containers = (pod.get("spec") or {}).get("containers") or []
    if not containers:
        raise PodError("the Pod has no containers")
    if not name:
        return containers[0]
    for c in containers:
        if c.get("name") == name:
            return c
    raise PodError("no container named %r (found %s)" % (name, ", ".join(str(c.get("name")) for c in containers)))


def flag_values(argv):
    """{--flag: value} of `--flag=value` arguments (a bare `--flag` has value None)."""
    out = {}
    for arg in argv:
        if isinstance(arg, str) and arg.startswith("--"):
            name, sep, value = arg.partition("=")
            out[name] = value if sep else None
    return out


def set_flags(argv, flags):
    """`argv` with each flag of `flags` set in place (or appended), removed when its value is None.

    Returns (new argv, changed flag names). Other arguments keep their order.
    """
    for name in flags:
        check_flag(name)
    new, seen, changed = [], set(), []
    for arg in argv:
        name = arg.partition("=")[0] if isinstance(arg, str) and arg.startswith("--") else None
        if name in flags:
            if name in seen:
                changed.append(name)  # a duplicate goes
                continue
            seen.add(name)
            value = flags[name]
            if value is None:
                changed.append(name)
                continue
            want = "%s=%s" % (name, value)
            if arg != want:
                changed.append(name)
            new.append(want)
        else:
            new.append(arg)
    for name, value in flags.items():
        if name not in seen and value is not None:
            new.append("%s=%s" % (name, value))
            changed.append(name)
    return new, sorted(set(changed))


def parse_overrides(text):
    """kube-apiserver's --etcd-servers-overrides ('group/resource#url;url,...') → [(resource, [urls])]."""
    entries = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        resource, sep, servers = part.partition("#")
        if not sep or not servers or "/" not in resource:
            raise PodError("%r is not a group/resource#servers override" % part)
        entries.append((resource, [s for s in servers.split(";") if s]))
    return entries


def merge_overrides(existing, resource, servers):
    """`existing` overrides with `resource` served by `servers` (replaced in place, or appended); others kept."""
    if "/" not in resource:
        raise PodError("resource %r must be group/resource (the core group is empty: /events)" % resource)
    if not servers:
        raise PodError("give at least one server for %s" % resource)
    entries = parse_overrides(existing)
    out, done = [], False
    for res, urls in entries:
        if res == resource:
            if not done:
                out.append((res, list(servers)))
                done = True
            continue
        out.append((res, urls))
    if not done:
        out.append((resource, list(servers)))
    return ",".join("%s#%s" % (res, ";".join(urls)) for res, urls in out)
