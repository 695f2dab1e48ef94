# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: kube-scheduler's bin-packing profile in a KubeSchedulerConfiguration, as data.

The rules checked here are the scheduler's own (pkg/scheduler/apis/config/validation: a resource weight in (0, 100],
a shape point's utilization in [0, 100] and score in [0, 10], utilizations increasing) plus the API's resource-name
rule (a standard name, or a qualified extended name such as nvidia.com/gpu), which the scheduler does not check: a
misspelt name there is silently worth nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import re

KIND = "KubeSchedulerConfiguration"
GROUP = "kubescheduler.config.k8s.io"
# Which versions of the config API a file may already be in (their pluginConfig/scoringStrategy shape is the same).
API_VERSIONS = ("v1", "v1beta3", "v1beta2")
STRATEGIES = ("MostAllocated", "RequestedToCapacityRatio")
DEFAULT_PROFILE = "default-scheduler"
FIT = "NodeResourcesFit"
SPREAD = "PodTopologySpread"
NO_DEFAULT_SPREAD = {"defaultingType": "List", "defaultConstraints": []}
BALANCED = "NodeResourcesBalancedAllocation"
MAX_WEIGHT = 100  # a resource weight and a score plugin weight (the scheduler's MaxWeight for resources)
MAX_SHAPE_SCORE = 10  # config.MaxCustomPriorityScore
# k8s.io/api/core/v1 names without a domain, and the standard prefixed ones (IsStandardResourceName).
STANDARD = ("cpu", "memory", "ephemeral-storage", "storage", "pods")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_IMAGE_VERSION = re.compile(r":v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+@].*)?$")


class SchedulerConfigError(Exception):
    pass


def resource_name_error(name):
    """None when `name` names a resource the scheduler can weigh, else why not."""
    if not isinstance(name, str) or not name:
        return "%r is not a resource name" % (name,)
    if name in STANDARD or re.match(r"^hugepages-[0-9]+[KMGTPE]i?$", name):
        return None
    prefix, sep, short = name.rpartition("/")
    if not sep:
        return ("%r is not a resource name: without a domain only %s and hugepages-<size> are "
                "(an extended resource has one, for example nvidia.com/gpu)" % (name, ", ".join(STANDARD)))
    if len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix):
        return "%r is not a resource name: %r is not a DNS subdomain" % (name, prefix)
    if len(short) > 63 or not _QUALIFIED_NAME.match(short):
        return "%r is not a resource name: %r is not a qualified name" % (name, short)
    if prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io"):
        if prefix != "requests.kubernetes.io" and not name.startswith("hugepages-"):
            return "%r is not a resource name: the kubernetes.io domain is reserved" % (name,)
    return None


def _int(value, what):
    """An int (a string of digits too, as Jinja may hand one over); anything else is an error naming `what`."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.match(r"^-?[0-9]+$", value.strip()):
        return int(value)
    raise SchedulerConfigError("%s must be a whole number, got %r" % (what, value))


def check_settings(strategy, resources, fit_weight, balanced_weight, percentage, shape, profile, prefix=""):
    """Every problem with the wanted bin-packing settings, as messages naming the setting (`prefix` + its name, so a
    role's message names the role's variable), empty when there is none."""
    problems = []
    if strategy not in STRATEGIES:
        problems.append("strategy: %r is not one of %s" % (strategy, ", ".join(STRATEGIES)))
    if not isinstance(resources, list) or not resources:
        problems.append("resources: give at least one {name, weight}")
        resources = []
    seen = set()
    for i, res in enumerate(resources):
        if not isinstance(res, dict) or set(res) - {"name", "weight"}:
            problems.append("resources[%d]: %r is not {name, weight}" % (i, res))
            continue
        err = resource_name_error(res.get("name"))
        if err:
            problems.append("resources[%d].name: %s" % (i, err))
        elif res["name"] in seen:
            problems.append("resources[%d].name: %s is listed twice" % (i, res["name"]))
        seen.add(res.get("name"))
        try:
            weight = _int(res.get("weight", 1), "resources[%d].weight" % i)
            if not 1 <= weight <= MAX_WEIGHT:
                problems.append("resources[%d].weight: %d for %s is not in 1..%d (the scheduler refuses 0)"
                                % (i, weight, res.get("name"), MAX_WEIGHT))
        except SchedulerConfigError as exc:
            problems.append(str(exc))
    for what, value, low in (("fit_weight", fit_weight, 1), ("balanced_allocation_weight", balanced_weight, 0)):
        try:
            value = _int(value, what)
            if not low <= value <= MAX_WEIGHT:
                problems.append("%s: %d is not in %d..%d%s" % (what, value, low, MAX_WEIGHT,
                                                               " (0 disables the plugin)" if low == 0 else ""))
        except SchedulerConfigError as exc:
            problems.append(str(exc))
    if percentage is not None:
        try:
            value = _int(percentage, "percentage_of_nodes_to_score")
            if not 0 <= value <= 100:
                problems.append("percentage_of_nodes_to_score: %d is not in 0..100 (0: the scheduler's adaptive "
                                "default)" % value)
        except SchedulerConfigError as exc:
            problems.append(str(exc))
    if strategy == "RequestedToCapacityRatio":
        problems.extend(shape_problems(shape))
    if not isinstance(profile, str) or len(profile) > 63 or not _DNS1123_LABEL.match(profile or ""):
        problems.append("profile: %r is not a scheduler name (a DNS label, as pods' schedulerName)" % (profile,))
    return [prefix + p for p in problems]


def shape_problems(shape):
    if not isinstance(shape, list) or not shape:
        return ["shape: RequestedToCapacityRatio needs at least one {utilization, score} point"]
    problems, last = [], -1
    for i, point in enumerate(shape):
        if not isinstance(point, dict) or set(point) != {"utilization", "score"}:
            problems.append("shape[%d]: %r is not {utilization, score}" % (i, point))
            continue
        try:
            util = _int(point["utilization"], "shape[%d].utilization" % i)
            score = _int(point["score"], "shape[%d].score" % i)
        except SchedulerConfigError as exc:
            problems.append(str(exc))
            continue
        if not 0 <= util <= 100:
            problems.append("shape[%d].utilization: %d is not in 0..100" % (i, util))
        elif util <= last:
            problems.append("shape[%d].utilization: %d does not increase (the one before is %d)" % (i, util, last))
        last = max(last, util)
        if not 0 <= score <= MAX_SHAPE_SCORE:
            problems.append("shape[%d].score: %d is not in 0..%d" % (i, score, MAX_SHAPE_SCORE))
    return problems


def version_from_image(image):
    """(major, minor) from a kube-scheduler image reference's tag (registry.k8s.io/kube-scheduler:v1.30.2)."""
    m = _IMAGE_VERSION.search(image or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def parse_version(text):
    m = re.match(r"^v?(\d+)\.(\d+)", str(text or ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def api_version_for(version):
    """The config API a new file is written in for kube-scheduler `version` ((major, minor))."""
    if version is None:
        raise SchedulerConfigError("the scheduler's version is unknown (no tag on its image): set it")
    if version >= (1, 25):
        return GROUP + "/v1"
    if version >= (1, 23):
        return GROUP + "/v1beta3"
    raise SchedulerConfigError("kube-scheduler %d.%d is older than 1.23, which this role's config API (v1beta3) "
                               "needs" % version)


def _named(items, name):
    for item in items:
        if isinstance(item, dict) and item.get("name") == name:
            return item
    return None


def _without(items, name):
    return [i for i in items if not (isinstance(i, dict) and i.get("name") == name)]


def _list(parent, key, where):
    value = parent.get(key)
    if value is None:
        value = []
    if not isinstance(value, list):
        raise SchedulerConfigError("%s.%s is not a list" % (where, key))
    parent[key] = value
    return value


def _map(parent, key, where):
    value = parent.get(key)
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise SchedulerConfigError("%s.%s is not a mapping" % (where, key))
    parent[key] = value
    return value


def merge(cfg, api_version, profile, strategy, resources, fit_weight, balanced_weight, percentage, shape,
          replace_default, default_spreading=True):
    """The KubeSchedulerConfiguration `cfg` (None: a new one) with the bin-packing profile set; other profiles, plugins
    and plugin arguments kept. Returns the new config (the same object, changed in place, when one was given).

    `replace_default`: the profile is default-scheduler itself (pods need no schedulerName); otherwise `profile` is a
    profile of its own next to the others, which pods choose with spec.schedulerName.
    `default_spreading`: False turns off the scheduler's system default topology spreading (hostname maxSkew 3, zone
    maxSkew 5, for the pods of Services, ReplicaSets and StatefulSets) in the profile: PodTopologySpread's score
    (weight 2) would otherwise spread those pods over nodes against the packing. True puts back the default where
    False had taken it away, and leaves a user's own PodTopologySpread arguments as they are.
    """
    if cfg is None:
        cfg = {"apiVersion": api_version, "kind": KIND}
    if not isinstance(cfg, dict) or cfg.get("kind") != KIND:
        raise SchedulerConfigError("not a %s (kind: %r)" % (KIND, cfg.get("kind") if isinstance(cfg, dict) else None))
    group, _sep, version = str(cfg.get("apiVersion", "")).partition("/")
    if group != GROUP or version not in API_VERSIONS:
        raise SchedulerConfigError("apiVersion %r is not one of %s" % (
            cfg.get("apiVersion"), ", ".join(GROUP + "/" + v for v in API_VERSIONS)))
    profiles = _list(cfg, "profiles", "the config")
    name = DEFAULT_PROFILE if replace_default else profile
    target = None
    for p in profiles:
        if not isinstance(p, dict):
            raise SchedulerConfigError("profiles has an entry that is not a mapping: %r" % (p,))
        if (p.get("schedulerName") or DEFAULT_PROFILE) == name:
            target = p
    if target is None:
        target = {"schedulerName": name}
        if not profiles and name != DEFAULT_PROFILE:
            # No profile at all means default-scheduler; keep it, so pods without a schedulerName still schedule.
            profiles.append({"schedulerName": DEFAULT_PROFILE})
        profiles.append(target)
    where = "profiles[%s]" % name
    args = {"type": strategy, "resources": [{"name": r["name"], "weight": int(r.get("weight", 1))}
                                            for r in resources]}
    if strategy == "RequestedToCapacityRatio":
        args["requestedToCapacityRatio"] = {"shape": [{"utilization": int(p["utilization"]), "score": int(p["score"])}
                                                      for p in shape]}
    plugin_config = _list(target, "pluginConfig", where)
    fit = _named(plugin_config, FIT)
    if fit is None:
        fit = {"name": FIT, "args": {}}
        plugin_config.append(fit)
    fit_args = _map(fit, "args", where + ".pluginConfig[%s]" % FIT)
    fit_args["scoringStrategy"] = args
    spread = _named(plugin_config, SPREAD)
    if not default_spreading:
        if spread is None:
            spread = {"name": SPREAD, "args": {}}
            plugin_config.append(spread)
        _map(spread, "args", where + ".pluginConfig[%s]" % SPREAD).update(copy.deepcopy(NO_DEFAULT_SPREAD))
    elif spread is not None and spread.get("args") == NO_DEFAULT_SPREAD:
        target["pluginConfig"] = plugin_config = _without(plugin_config, SPREAD)
    plugins = _map(target, "plugins", where)
    score = _map(plugins, "score", where + ".plugins")
    enabled = _list(score, "enabled", where + ".plugins.score")
    disabled = _list(score, "disabled", where + ".plugins.score")
    if _named(disabled, "*") is not None:
        raise SchedulerConfigError("%s disables every score plugin ('*'): bin-packing needs %s's score" % (where, FIT))
    wanted = [(FIT, int(fit_weight))]
    if int(balanced_weight) > 0:
        wanted.append((BALANCED, int(balanced_weight)))
    new_enabled = enabled
    for plugin, weight in wanted:
        entry = _named(new_enabled, plugin)
        if entry is None:
            new_enabled.append({"name": plugin, "weight": weight})
        elif entry.get("weight") != weight:
            entry["weight"] = weight
        score["disabled"] = disabled = _without(disabled, plugin)
    if int(balanced_weight) == 0:
        score["enabled"] = new_enabled = _without(new_enabled, BALANCED)
        if _named(disabled, BALANCED) is None:
            disabled.append({"name": BALANCED})
    if not disabled:
        del score["disabled"]
    if percentage is not None:
        cfg["percentageOfNodesToScore"] = int(percentage)
    return cfg


# kube-scheduler's flags that it ignores once it has --config ("This parameter is ignored if a config file is
# specified in --config"): their values go into the file, where the scheduler reads them from then on.
FLAG_FIELDS = {
    "--kubeconfig": ("clientConnection", "kubeconfig", str),
    "--kube-api-qps": ("clientConnection", "qps", float),
    "--kube-api-burst": ("clientConnection", "burst", int),
    "--kube-api-content-type": ("clientConnection", "contentType", str),
    "--leader-elect": ("leaderElection", "leaderElect", bool),
    "--leader-elect-lease-duration": ("leaderElection", "leaseDuration", str),
    "--leader-elect-renew-deadline": ("leaderElection", "renewDeadline", str),
    "--leader-elect-retry-period": ("leaderElection", "retryPeriod", str),
    "--leader-elect-resource-lock": ("leaderElection", "resourceLock", str),
    "--leader-elect-resource-name": ("leaderElection", "resourceName", str),
    "--leader-elect-resource-namespace": ("leaderElection", "resourceNamespace", str),
    "--profiling": (None, "enableProfiling", bool),
    "--contention-profiling": (None, "enableContentionProfiling", bool),
}


def carry_flags(cfg, flags):
    """Copy into `cfg` the values of the flags the scheduler stops reading once it has --config (FLAG_FIELDS), where
    the file does not set them already (the file wins); returns the flags carried."""
    carried = []
    for flag, (section, field, kind) in sorted(FLAG_FIELDS.items()):
        if flag not in flags:
            continue
        raw = flags[flag]
        try:
            if kind is bool:
                if raw not in (None, "true", "false", "True", "False", "1", "0"):
                    raise ValueError(raw)
                value = raw in (None, "true", "True", "1")
            else:
                value = kind(raw)
        except (TypeError, ValueError) as exc:
            raise SchedulerConfigError("%s=%s is not %s" % (flag, raw, {
                bool: "true or false", int: "a whole number", float: "a number"}.get(kind, "text"))) from exc
        parent = cfg if section is None else _map(cfg, section, "the config")
        if field not in parent:
            parent[field] = value
            carried.append(flag)
    return carried


def content_hash(text):
    """A short digest of the config's text, for the manifest annotation that makes the kubelet restart the pod."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def resolve_host_path(container_path, volumes):
    """The node's path of a file the container sees at `container_path`, through the hostPath volume mounted over it
    (the deepest one); None when no volume holds it (from _static_pod.volumes)."""
    best = None
    for vol in volumes:
        mount = vol.get("mount_path")
        if not mount or not vol.get("host_path"):
            continue
        if container_path == mount or container_path.startswith(mount.rstrip("/") + "/"):
            if best is None or len(mount) > len(best["mount_path"]):
                best = vol
    if best is None:
        return None
    rest = container_path[len(best["mount_path"]):]
    return best["host_path"].rstrip("/") + rest if rest else best["host_path"]
