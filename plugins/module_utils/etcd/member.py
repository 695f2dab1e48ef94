# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: an etcd member on this node as data, whichever way it runs (etcd_member_info).

A systemd unit reading an environment file (the distro package's /etc/default/etcd, kubespray's /etc/etcd.env) or
kubeadm's static pod (/etc/kubernetes/manifests/etcd.yaml): both give the same settings (ETCD_NAME, ETCD_DATA_DIR,
the advertised URLs, the quota), with the environment file read by the one env parser (_confmerge.parse_env).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shlex
import time

from ansible_collections.kubescale.tuning.plugins.module_utils.kube.static_pod import (
    find_container,
    flag_values,
    volumes,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.node.confmerge import parse_env

# A static pod's flags, as the settings a systemd member reads from its environment.
FLAG_NAMES = {
    "ETCD_NAME": "--name",
    "ETCD_ADVERTISE_CLIENT_URLS": "--advertise-client-urls",
    "ETCD_INITIAL_ADVERTISE_PEER_URLS": "--initial-advertise-peer-urls",
    "ETCD_QUOTA_BACKEND_BYTES": "--quota-backend-bytes",
    "ETCD_INITIAL_CLUSTER": "--initial-cluster",
}
# What the Debian/Ubuntu etcd-server unit sets when the environment file does not.
UNIT_DEFAULTS = {
    "ETCD_ADVERTISE_CLIENT_URLS": "http://localhost:2379",
    "ETCD_INITIAL_ADVERTISE_PEER_URLS": "http://localhost:2380",
}
SUFFIX = ". Nothing was changed."


class MemberError(Exception):
    """No member this can move, said the way an operator fixes it."""


def parse_show(text):
    """`systemctl show -p LoadState -p ActiveState -p Environment` as {property: value}; Environment as a dict."""
    props = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            props[key] = value
    env = {}
    try:
        words = shlex.split(props.get("Environment", ""), posix=True)
    except ValueError:  # an unbalanced quote: systemd's own words, split on blanks
        words = props.get("Environment", "").split()
    for word in words:
        name, sep, value = word.partition("=")
        if sep and name:
            env[name] = value
    props["Environment"] = env
    return props


def kind_of(mode, pod_found, load_state, manifest, service):
    """systemd or static_pod: the mode asked for, or (auto) what is on the node; raises when there is none."""
    kind = mode if mode != "auto" else ("static_pod" if pod_found else ("systemd" if load_state == "loaded" else None))
    if (kind == "systemd" and load_state == "loaded") or (kind == "static_pod" and pod_found):
        return kind
    raise MemberError(
        "etcd_local_disk_mode %s: no etcd member to move (%s %s, %s LoadState=%s). It moves a member run by systemd "
        "(etcd_local_disk_service with etcd_local_disk_env_file: the distro package's or kubespray's layout) or "
        "kubeadm's static pod (etcd_local_disk_manifest)%s"
        % (mode, manifest, "exists" if pod_found else "absent", service, load_state or "unknown", SUFFIX))


def pod_settings(pod, container_name):
    """(settings, flags, volumes, the data volume's name) of a static pod: its data directory is the host path of
    the hostPath volume the container mounts at --data-dir (kubeadm: etcd-data at /var/lib/etcd)."""
    container = find_container(pod, container_name)
    flags = flag_values(container.get("command") or container.get("args") or [])
    vols = volumes(pod, container)
    data_dir = os.path.normpath(flags["--data-dir"]) if flags.get("--data-dir") else None
    data = [v for v in vols if v["mount_path"] and os.path.normpath(v["mount_path"]) == data_dir]
    settings = dict(UNIT_DEFAULTS)
    settings.update((env, flags[flag]) for env, flag in FLAG_NAMES.items() if flag in flags)
    settings["ETCD_DATA_DIR"] = data[0]["host_path"] if data else ""
    return settings, flags, vols, data[0]["name"] if data else ""


def systemd_settings(unit_env, file_env):
    """The unit's defaults, then its Environment=, then its environment file (systemd's order)."""
    settings = dict(UNIT_DEFAULTS)
    settings.update(unit_env)
    settings.update(file_env)
    return settings


def read_env_file(text, path):
    try:
        return parse_env(text) if text else {}
    except ValueError as exc:
        raise MemberError("etcd_local_disk_env_file %s: %s%s" % (path, exc, SUFFIX)) from exc


def recorded(text):
    """What the last run recorded on the OS disk (the peers' client URLs survive an SSD wipe there)."""
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def marker(text):
    """The local SSD's wipe marker (written when the SSD was found blank and formatted): its time, or ''."""
    try:
        return str((json.loads(text) or {}).get("wiped_at") or "") if text else ""
    except (ValueError, AttributeError):
        return ""


def moved_from_path(data_dir):
    """Where a move onto `data_dir` notes the directory it moves from, beside the data directory on the SSD (a wipe
    takes it along), from the copy until the old directory is kept as its backup."""
    return data_dir.rstrip("/") + ".moved-from"


def moved_from(text, exists):
    """The old directory an interrupted move left as it was (the note's path, while `exists(path)`), or ''."""
    path = (text or "").strip()
    return path if path.startswith("/") and exists(path) else ""


def formatted_since(recorded_data, ssd_marker):
    """Whether the local SSD was formatted since the last run recorded its wipe marker (never, when it recorded none)."""
    return "ssd_marker" in recorded_data and recorded_data["ssd_marker"] != ssd_marker


def describe(kind, settings, flags, data_dir, recorded_data, ssd_marker, target_member, current_member_fn,
             active_state, mode, manifest, service, env_file):
    """Everything the role decides from, or raises when there is no member here to move."""
    current = os.path.normpath(settings.get("ETCD_DATA_DIR") or "") if settings.get("ETCD_DATA_DIR") else ""
    if not current.startswith("/"):
        if kind == "static_pod":
            raise MemberError("%s: the etcd container's --data-dir (%s) is not where a hostPath volume is mounted%s"
                              % (manifest, flags.get("--data-dir") or "unset", SUFFIX))
        raise MemberError("%s sets no absolute ETCD_DATA_DIR (in %s or the unit), got '%s'%s"
                          % (service, env_file, settings.get("ETCD_DATA_DIR") or "", SUFFIX))
    # On the SSD already, and its data is gone: no member directory, or the SSD was formatted since the last run
    # recorded the marker (at boot etcd may have written a fresh, useless member directory before failing).
    wiped = current == data_dir and (
        not target_member or formatted_since(recorded_data, ssd_marker))
    current_member = current_member_fn(current)
    if kind == "systemd" and active_state != "active" and not current_member and not wiped:
        raise MemberError(
            "etcd_local_disk_mode %s: %s is not running and %s holds no member data, so there is no member here to "
            "move (is it kubeadm's static pod? etcd_local_disk_mode static_pod or auto finds %s)%s"
            % (mode, service, current, manifest, SUFFIX))
    return dict(
        name=settings.get("ETCD_NAME") or "default",
        data_dir=current,
        client_urls=[u for u in (settings.get("ETCD_ADVERTISE_CLIENT_URLS") or "").split(",") if u],
        peer_urls=[u for u in (settings.get("ETCD_INITIAL_ADVERTISE_PEER_URLS") or "").split(",") if u],
        move=current != data_dir,
        wiped=wiped,
        # A run that died between stopping the member and starting it again left it stopped with its data whole.
        start_stopped=kind == "systemd" and active_state != "active" and current_member and not wiped,
    )


def tls_files(kind, client_urls, flags, cacert, cert, key):
    """etcdctl's TLS files: the given ones; for a kubeadm static pod member with https client URLs and none given,
    kubeadm's etcd CA (the manifest's --trusted-ca-file) and its healthcheck-client certificate beside it."""
    kubeadm = kind == "static_pod" and any(u.startswith("https:") for u in client_urls) and not cacert
    if not kubeadm:
        return dict(cacert=cacert, cert=cert, key=key)
    ca = flags.get("--trusted-ca-file") or "/etc/kubernetes/pki/etcd/ca.crt"
    pki = os.path.dirname(ca)
    return dict(cacert=ca, cert=cert or pki + "/healthcheck-client.crt", key=key or pki + "/healthcheck-client.key")


def start_plan(data_exists, fact_text, marker_text, members, unit_show=None):
    """How a member this collection runs as a systemd unit (events_etcd) starts, from what is on the node.

    wiped: the SSD was formatted since the last run recorded its marker, so whatever the member wrote at boot on the
    empty disk is not its data. rejoin: no (valid) data, the cluster formed before (a fact was recorded) and has other
    members, so it is re-added through a peer. bootstrap: no data and nothing to rejoin, so part of a brand-new
    cluster (or a lone member starting over: Events are short-lived, the API server writes them again).
    running: the unit (`systemctl show -p LoadState -p ActiveState -p UnitFileState`'s text, unit_show) is loaded,
    active and enabled. start: the role's enable-and-start step has anything to do - the unit is not running so, or
    the member is stopped, re-added or bootstrapped on the way (not known without unit_show: always).
    """
    last = recorded(fact_text)
    ssd_marker = marker(marker_text)
    wiped = formatted_since(last, ssd_marker)
    no_data = not data_exists or wiped
    formed = fact_text is not None and members > 1
    unit = parse_show(unit_show) if unit_show is not None else {}
    running = (unit.get("LoadState") == "loaded" and unit.get("ActiveState") == "active"
               and unit.get("UnitFileState") == "enabled")
    return dict(data_exists=data_exists, recorded=last, ssd_marker=ssd_marker, wiped=wiped,
                rejoin=no_data and formed, bootstrap=no_data and not formed, running=running,
                start=not running or no_data)


# A file this much newer than the process is one it has not read: the start time derived from /proc is exact to a
# clock tick, and a configuration written and its process restarted in one run are seconds apart.
STALE_MARGIN = 1.0


def process_started(pid, proc="/proc", now=None):
    """When process `pid` started, in seconds since the epoch (None when it is gone): its start in clock ticks since
    boot (/proc/<pid>/stat) against the time since boot (/proc/uptime), read now."""
    try:
        with open(os.path.join(proc, str(pid), "stat")) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(os.path.join(proc, "uptime")) as f:
            uptime = float(f.read().split()[0])
    except (IOError, OSError, IndexError, ValueError):
        return None
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    age = uptime - int(fields[19]) / float(ticks)  # field 22 of stat: starttime (after pid and comm)
    return (time.time() if now is None else now) - age


def stale_reads(reads, started, mtime=os.path.getmtime):
    """The files of `reads` written after the process started at `started` (it runs without what they say now): a
    run that wrote them died before it restarted the process. [] when the process does not run (`started` None)."""
    if started is None:
        return []
    out = []
    for path in reads:
        try:
            if mtime(path) > started + STALE_MARGIN:
                out.append(path)
        except (IOError, OSError):
            continue
    return out
