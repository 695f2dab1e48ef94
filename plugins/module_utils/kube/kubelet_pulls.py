# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""kubelet_pulls' decisions: where this kubelet and runtime read the pull settings, as one node_state spec.

The KubeletConfiguration file gets serializeImagePulls (and maxParallelImagePulls, kubelet 1.27+). The pull progress
deadline goes where the kubelet's version and runtime read it: a kubelet before 1.24 with dockershim takes
--image-pull-progress-deadline in KUBELET_EXTRA_ARGS; Docker with kubelet 1.24+ runs cri-dockerd, which takes it in
a drop-in; containerd has its own image_pull_progress_timeout (containerd_tuning's). The version is the given one,
else what `kubelet --version` said on the node; a node without a kubelet gets the current layout.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

CONFIG_API = "kubelet.config.k8s.io/v1beta1"
# kubeadm's patch target for the kubelet's configuration (`kubeadm join|upgrade node --patches DIR`): a JSON merge
# patch, the suffix keeping it apart from an operator's own patches of the same target.
KUBEADM_PATCH = "kubeletconfiguration-kubescale+merge.yaml"
CRI_DOCKERD_UNIT = "cri-docker.service"
CRI_DOCKERD_DROPIN = "20-kubescale-pulls.conf"
FACT_NAME = "kubescale_kubelet_pulls"
VERSION_OPTION_RE = re.compile(r"^v?[0-9]+\.[0-9]+")
VERSION_OUTPUT_RE = re.compile(r"v([0-9]+\.[0-9]+(\.[0-9]+)?)")
DURATION_RE = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$")
LEGACY_BEFORE = (1, 24)
MAX_PARALLEL_SINCE = (1, 27)


class PullsError(Exception):
    """A value this role cannot apply; the message names the variable."""


def version_from_output(text):
    """The version in `kubelet --version`'s answer (Kubernetes v1.29.4), or "" when there is none."""
    m = VERSION_OUTPUT_RE.search(text or "")
    return m.group(1) if m else ""


def version_tuple(version):
    """(major, minor) of 1.29.4 or v1.29; None for ""."""
    m = re.match(r"^v?([0-9]+)\.([0-9]+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def check(p, prefix=""):
    """Raise PullsError naming the variable (prefix + option) for a value the kubelet would refuse."""
    parallel = p["max_parallel_image_pulls"]
    if parallel is not None and parallel < 1:
        raise PullsError("%smax_parallel_image_pulls (%s) must be unset or 1 or more" % (prefix, parallel))
    if parallel is not None and parallel > 1 and p["serialize_image_pulls"]:
        raise PullsError("%smax_parallel_image_pulls (%s) above 1 needs %sserialize_image_pulls false (it is true)"
                         % (prefix, parallel, prefix))
    if not DURATION_RE.match(p["image_pull_progress_deadline"] or ""):
        raise PullsError("%simage_pull_progress_deadline (%s) must be a Go duration like 30m"
                         % (prefix, p["image_pull_progress_deadline"]))
    if p["kubelet_version"] and not VERSION_OPTION_RE.match(p["kubelet_version"]):
        raise PullsError("%skubelet_version (%s) must be empty or like 1.29.4" % (prefix, p["kubelet_version"]))
    if not p["config_path"].startswith("/") or not re.search(r"\.ya?ml$", p["config_path"]):
        raise PullsError("%sconfig_path (%s) must be an absolute .yaml path" % (prefix, p["config_path"]))


def check_version(p, version, prefix=""):
    """Raise PullsError when maxParallelImagePulls is set for a kubelet that does not have it."""
    have = version_tuple(version)
    if p["max_parallel_image_pulls"] is not None and have is not None and have < MAX_PARALLEL_SINCE:
        raise PullsError("%smax_parallel_image_pulls (%s) needs kubelet 1.27 or later; this kubelet is %s: leave it "
                         "unset (serializeImagePulls false alone pulls in parallel)"
                         % (prefix, p["max_parallel_image_pulls"], version))


def layout(runtime, version):
    """legacy (dockershim flag), cri-dockerd (drop-in) or containerd (containerd_tuning's own timeout)."""
    if runtime != "docker":
        return "containerd"
    have = version_tuple(version)
    return "legacy" if have is not None and have < LEGACY_BEFORE else "cri-dockerd"


def dropin_path(unit_dir="/etc/systemd/system"):
    return "%s/%s.d/%s" % (unit_dir, CRI_DOCKERD_UNIT, CRI_DOCKERD_DROPIN)


def cri_dockerd_dropin(command, deadline):
    return ("# Managed by kubescale.tuning.kubelet_pulls: big images are not cancelled while they unpack.\n"
            "[Service]\nExecStart=\nExecStart=%s --image-pull-progress-deadline=%s\n" % (command, deadline))


def pull_settings(p):
    """The KubeletConfiguration fields this tuning sets (maxParallelImagePulls only when given)."""
    settings = {"serializeImagePulls": bool(p["serialize_image_pulls"])}
    if p["max_parallel_image_pulls"] is not None:
        settings["maxParallelImagePulls"] = int(p["max_parallel_image_pulls"])
    return settings


def patch_path(p):
    """This node's kubeadm patch of the kubelet's configuration, or None when no patches directory is given."""
    return os.path.join(p["kubeadm_patches_dir"], KUBEADM_PATCH) if p.get("kubeadm_patches_dir") else None


def node_state_spec(p, version, service=True):
    """The node_state spec (before its validate()) that applies the pull settings for this version and runtime: the
    kubelet's file, and kubeadm's patch of it (what `kubeadm join` and `kubeadm upgrade node --patches` apply over
    the cluster's kubelet-config, so this node's class keeps its own values)."""
    where = layout(p["container_runtime"], version)
    settings = dict({"apiVersion": CONFIG_API, "kind": "KubeletConfiguration"}, **pull_settings(p))
    merges = [dict(path=p["config_path"], format="yaml", settings=settings)]
    directories = [dict(path=os.path.dirname(p["config_path"]), mode="0700")]
    if patch_path(p):
        merges.append(dict(path=patch_path(p), format="yaml", settings=pull_settings(p)))
        directories.append(dict(path=p["kubeadm_patches_dir"], mode="0755"))
    dropins = []
    if where == "legacy":
        merges.append(dict(path=p["env_file"], format="env", settings={
            "KUBELET_EXTRA_ARGS": {"--image-pull-progress-deadline": p["image_pull_progress_deadline"]}}))
        deadline_in = "%s KUBELET_EXTRA_ARGS" % p["env_file"]
    elif where == "cri-dockerd":
        dropins.append(dict(units=[CRI_DOCKERD_UNIT], name=CRI_DOCKERD_DROPIN,
                            content=cri_dockerd_dropin(p["cri_dockerd_command"], p["image_pull_progress_deadline"])))
        deadline_in = dropin_path()
    else:
        deadline_in = "containerd image_pull_progress_timeout"
    units = []
    if service:
        units = [dict(name="kubelet.service", restart_on=[p["config_path"], p["env_file"]]),
                 dict(name=CRI_DOCKERD_UNIT, restart_on=[dropin_path()])]
    return dict(
        directories=directories,
        merges=merges, dropins=dropins, units=units,
        fact=dict(name=FACT_NAME, data=dict(
            kubelet_version=version, config_path=p["config_path"],
            serialize_image_pulls=bool(p["serialize_image_pulls"]),
            max_parallel_image_pulls=p["max_parallel_image_pulls"],
            deadline=p["image_pull_progress_deadline"], deadline_in=deadline_in, kubeadm_patch=patch_path(p))),
    ), where
