# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: extraArgs of a component in kubeadm's ClusterConfiguration (v1beta3 map, v1beta4 list), as data."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

COMPONENTS = ("apiServer", "controllerManager", "scheduler")
_ARG = re.compile(r"^[a-z0-9][a-z0-9-]*$")


class KubeadmError(Exception):
    pass


def cluster_configuration(docs):
    """The ClusterConfiguration among the YAML documents of a kubeadm config file."""
    found = [d for d in docs if isinstance(d, dict) and d.get("kind") == "ClusterConfiguration"]
    if len(found) != 1:
        raise KubeadmError("expected one ClusterConfiguration document, found %d" % len(found))
    api = str(found[0].get("apiVersion", ""))
    if not api.startswith("kubeadm.k8s.io/"):
        raise KubeadmError("apiVersion %r is not kubeadm.k8s.io/..." % api)
    return found[0]


def get_args(cfg, component):
    """{name: value} of the component's extraArgs, for either layout."""
    extra = (cfg.get(component) or {}).get("extraArgs")
    if extra is None:
        return {}
    if isinstance(extra, dict):  # v1beta3 and older
        return dict((str(k), str(v)) for k, v in extra.items())
    if isinstance(extra, list):  # v1beta4: [{name, value}]
        return dict((str(a.get("name")), str(a.get("value"))) for a in extra if isinstance(a, dict))
    raise KubeadmError("%s.extraArgs is neither a mapping nor a list" % component)


def set_args(cfg, component, args):
    """Set (None removes) each of `args` in the component's extraArgs in place; returns the changed names."""
    if component not in COMPONENTS:
        raise KubeadmError("component %r is not one of %s" % (component, ", ".join(COMPONENTS)))
    section = cfg.setdefault(component, {}) or {}
    cfg[component] = section
    return _set_section_args(section, args, str(cfg.get("apiVersion", "")).endswith("/v1beta4"), component)


def _set_section_args(section, args, v1beta4, where):
    for name in args:
        if not _ARG.match(name or ""):
            raise KubeadmError("%r is not an argument name (without leading dashes, e.g. etcd-servers-overrides)"
                               % (name,))
    extra = section.get("extraArgs")
    if extra is not None and not isinstance(extra, (dict, list)):
        raise KubeadmError("%s.extraArgs is neither a mapping nor a list" % where)
    changed = []
    if v1beta4 or isinstance(extra, list):
        items = list(extra or [])
        for name, value in args.items():
            hits = [a for a in items if isinstance(a, dict) and a.get("name") == name]
            if value is None:
                if hits:
                    items = [a for a in items if a not in hits]
                    changed.append(name)
                continue
            if hits:
                if hits[0].get("value") != value or len(hits) > 1:
                    hits[0]["value"] = value
                    items = [a for a in items if a is hits[0] or a not in hits]
                    changed.append(name)
            else:
                items.append({"name": name, "value": value})
                changed.append(name)
        section["extraArgs"] = items
    else:
        mapping = dict(extra or {})
        for name, value in args.items():
            if value is None:
                if name in mapping:
                    del mapping[name]
                    changed.append(name)
            elif mapping.get(name) != value:
                mapping[name] = value
                changed.append(name)
        section["extraArgs"] = mapping
    return sorted(changed)


def local_etcd(cfg):
    """The ClusterConfiguration's etcd.local section (made when there is no etcd section); an external etcd fails:
    its members' settings live in their own hosts' kubeadm configuration."""
    etcd = cfg.get("etcd")
    if etcd is None:
        etcd = cfg["etcd"] = {}
    if not isinstance(etcd, dict):
        raise KubeadmError("etcd is not a mapping")
    if etcd.get("external"):
        raise KubeadmError("etcd is external in this ClusterConfiguration: the members' settings are in their own "
                           "hosts' kubeadm configuration, not here")
    local = etcd.get("local")
    if local is None:
        local = etcd["local"] = {}
    if not isinstance(local, dict):
        raise KubeadmError("etcd.local is not a mapping")
    return local


def set_etcd_local(cfg, data_dir=None, args=None):
    """etcd.local.dataDir (when given) and each of `args` in etcd.local.extraArgs (None removes); the changed names
    (dataDir, and the argument names)."""
    local = local_etcd(cfg)
    changed = []
    if data_dir is not None:
        if not str(data_dir).startswith("/"):
            raise KubeadmError("etcd.local.dataDir must be an absolute path, got %r" % (data_dir,))
        if local.get("dataDir") != data_dir:
            local["dataDir"] = data_dir
            changed.append("dataDir")
    if args:
        changed += _set_section_args(local, args, str(cfg.get("apiVersion", "")).endswith("/v1beta4"), "etcd.local")
    return changed


def arg_names(cfg, component):
    """The names in the component's extraArgs (etcd: etcd.local's), in their order: the order kubeadm appends them
    to the command it renders, after its own flags (sorted)."""
    section = (cfg.get("etcd") or {}).get("local") if component == "etcd" else cfg.get(component)
    extra = (section or {}).get("extraArgs") or []
    names = [str(a.get("name")) for a in extra if isinstance(a, dict)] if isinstance(extra, list) else \
        [str(k) for k in extra]
    seen = []
    for name in names:
        if name not in seen:
            seen.append(name)
    return seen


def set_extra_volume(cfg, component, name, host_path, mount_path, read_only=True, path_type="File"):
    """Make the component's extraVolumes hold `name` as given (the same shape in v1beta3 and v1beta4); True when it
    changed."""
    if component not in COMPONENTS:
        raise KubeadmError("component %r is not one of %s" % (component, ", ".join(COMPONENTS)))
    section = cfg.get(component) or {}
    cfg[component] = section
    vols = section.get("extraVolumes") or []
    if not isinstance(vols, list):
        raise KubeadmError("%s.extraVolumes is not a list" % component)
    section["extraVolumes"] = vols
    want = {"name": name, "hostPath": host_path, "mountPath": mount_path, "readOnly": bool(read_only),
            "pathType": path_type}
    for i, vol in enumerate(vols):
        if isinstance(vol, dict) and vol.get("name") == name:
            if vol == want:
                return False
            vols[i] = want
            return True
    vols.append(want)
    return True


def set_extra_env(cfg, component, name, value):
    """Make the component's extraEnvs (v1beta4) hold `name`=`value` (None removes it); True when it changed. kubeadm
    renders them, sorted by name, into the container's env."""
    if component not in COMPONENTS:
        raise KubeadmError("component %r is not one of %s" % (component, ", ".join(COMPONENTS)))
    section = cfg.get(component) or {}
    cfg[component] = section
    envs = section.get("extraEnvs") or []
    if not isinstance(envs, list):
        raise KubeadmError("%s.extraEnvs is not a list" % component)
    kept = [e for e in envs if not (isinstance(e, dict) and e.get("name") == name)]
    want = kept + ([{"name": name, "value": value}] if value is not None else [])
    if want == envs:
        return False
    if want:
        section["extraEnvs"] = want
    else:
        section.pop("extraEnvs", None)
    return True
