# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: the fleet audit's verdicts, as data (standard library only; runs on the controller).

`evaluate(host, node_class, observed, thresholds)` turns what the read-only tasks of kubescale.tuning.fleet_audit
registered on one node (module results, as Ansible returns them) into checks: {node, class, area, check, status,
message, value, threshold}, status green, amber or red. `document()` is the report (schema SCHEMA).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import datetime
import json

from ansible_collections.kubescale.tuning.plugins.module_utils.kube.static_pod import PodError, parse_overrides

try:
    import tomllib
except ImportError:  # pragma: no cover - controllers older than Python 3.11
    tomllib = None

SCHEMA = "kubescale.tuning/audit/v1"
STATUSES = ("green", "amber", "red")
CLASSES = ("etcd", "etcd_events", "kube_control_plane", "kube_node_cpu", "kube_node_gpu")

DEFAULT_THRESHOLDS = {
    "neigh_amber": 0.6,           # neighbour entries / gc_thresh3
    "neigh_red": 0.85,
    "etcd_db_amber": 0.6,         # member db size / quota-backend-bytes
    "etcd_db_red": 0.8,
    "etcd_revision_lag_amber": 1000,
    "snapshot_amber_hours": 26,
    "snapshot_red_hours": 72,
    "fdatasync_p99_amber_ms": 5.0,
    "fdatasync_p99_red_ms": 10.0,  # etcd's guidance: the WAL's fdatasync p99 under 10 ms
    "events_etcd_expected": True,
}

# kubescale.tuning.audit_report's options (its action plugin and its documentation stub share them).
ARGUMENT_SPEC = dict(
    hosts=dict(type="list", elements="str", required=True),
    dir=dict(type="path", required=True),
    thresholds=dict(type="dict", default={}),
    fail_on_red=dict(type="bool", default=True),
)

NAMES = ("setup", "sysctl", "neigh", "ssd", "ssd_marker", "ssd_mount", "latency", "etcd", "etcd_data", "etcd_snapshots",
         "events", "events_data", "apiserver", "overrides", "docker", "containerd", "kubelet", "images", "units",
         "kubeadm")


def _worst(statuses):
    ranked = [STATUSES.index(s) for s in statuses if s in STATUSES]
    return STATUSES[max(ranked)] if ranked else "green"


def _ran(result):
    """A registered result that ran (not skipped, not absent)."""
    return isinstance(result, dict) and bool(result) and not result.get("skipped")


def _failed(result):
    return _ran(result) and bool(result.get("failed") or result.get("unreachable"))


def _why(result):
    text = "; ".join(str(result[k]) for k in ("msg", "stderr") if result.get(k)) or "no message"
    return " ".join(text.split())[:400]


def _read(c, area, result, what):
    """`result` when its read ran and worked; None when it did not run, and a red check when it failed."""
    if not _ran(result):
        return None
    if _failed(result):
        c.add(area, "read", "red", "could not read %s: %s" % (what, _why(result)))
        return None
    return result


def _ratio_status(value, amber, red):
    if value is None:
        return "green"
    return "red" if value >= red else "amber" if value >= amber else "green"


class _Checks(object):
    def __init__(self, host, node_class):
        self.host, self.node_class, self.items = host, node_class, []

    def add(self, area, check, status, message, value=None, threshold=None):
        self.items.append({"node": self.host, "class": self.node_class, "area": area, "check": check,
                           "status": status, "message": message, "value": value, "threshold": threshold})


# --------------------------------------------------------------------------- per area

def _sysctl(c, facts, obs):
    fact = facts.get("kubescale_arp_sysctl")
    result = _read(c, "sysctl", obs.get("sysctl"), "the ARP cache sysctls") if fact else None
    if not result:
        return
    ours = result.get("file") or fact.get("file")
    for key, k in sorted((result.get("observed") or {}).items()):
        wanted, problems = k.get("wanted"), []
        if k.get("persisted") != wanted:
            problems.append("%s has %s, wanted %s" % (ours, k.get("persisted") or "no value", wanted))
        if k.get("winning_file") and k.get("winning_file") != ours and k.get("boot") != wanted:
            problems.append("%s sets %s at boot (read after %s), wanted %s"
                            % (k["winning_file"], k.get("boot"), ours, wanted))
        if k.get("live") is not None and k.get("live") != wanted:
            problems.append("live value %s, wanted %s (drift)" % (k["live"], wanted))
        if problems:
            c.add("sysctl", key, "red", "%s: %s" % (key, "; ".join(problems)), k.get("live"), wanted)
        elif k.get("live") is None:
            c.add("sysctl", key, "green", "%s = %s persisted in %s; not visible live here (%s): applies at boot"
                  % (key, wanted, ours, k.get("live_status")), k.get("persisted"), wanted)
        else:
            c.add("sysctl", key, "green", "%s = %s live, persisted in %s, wins at boot" % (key, wanted, ours),
                  k.get("live"), wanted)


def _neigh(c, obs, t):
    result = _read(c, "neighbours", obs.get("neigh"), "the neighbour tables")
    if not result:
        return
    report = (result.get("ansible_facts") or {}).get("kubescale_neigh") or {}
    for family in ("ipv4", "ipv6"):
        fam = report.get(family)
        if not isinstance(fam, dict):
            continue
        usage = fam.get("usage")
        status = _ratio_status(usage, t["neigh_amber"], t["neigh_red"])
        msg = "%s: %s entries of gc_thresh3 %s (%.1f %%)" % (
            family, fam.get("entries"), fam.get("gc_thresh3"), 100.0 * (usage or 0))
        if fam.get("table_fulls"):
            status = _worst([status, "amber"])
            msg += "; table_fulls %s since boot: the kernel had to drop neighbours" % fam["table_fulls"]
        c.add("neighbours", family, status, msg, usage, t["neigh_red"])
    overflows = report.get("kernel_log_overflow_messages")
    if overflows:
        c.add("neighbours", "kernel_log", "red", "%s 'neighbor table overflow' lines in the kernel log (%s)"
              % (overflows, report.get("kernel_log_source")), overflows, 0)


def _iso(epoch):
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ssd(c, facts, obs, t):
    fact = facts.get("kubescale_local_ssd")
    probe = _read(c, "local_ssd", obs.get("ssd"), "the local SSD") if fact else None
    if not probe:
        return
    found = (probe.get("ansible_facts") or {}).get("kubescale_local_ssd") or {}
    mount, mounted = fact.get("mount"), found.get("mounted_at") or []
    if mount in mounted:
        c.add("local_ssd", "mounted", "green", "%s mounted at %s" % (found.get("device"), mount), mounted, mount)
    else:
        c.add("local_ssd", "mounted", "red", "local SSD %s is not mounted at %s (mounted at: %s); its consumers "
              "write to the OS disk or fail" % (found.get("device"), mount, ", ".join(mounted) or "nowhere"),
              mounted, mount)
    fstype, label = found.get("found"), found.get("found_label")
    if fstype == fact.get("fstype") and label == fact.get("label"):
        c.add("local_ssd", "filesystem", "green", "%s labelled %s" % (fstype, label), fstype, fact.get("fstype"))
    else:
        c.add("local_ssd", "filesystem", "red", "%s holds %s labelled %r, local_ssd set up %s labelled %r"
              % (found.get("device"), fstype or "nothing", label, fact.get("fstype"), fact.get("label")),
              fstype, fact.get("fstype"))
    marker = obs.get("ssd_marker")
    if _ran(marker) and not _failed(marker):
        st = marker.get("stat") or {}
        if st.get("exists"):
            c.add("local_ssd", "wipe_marker", "green", "Azure wiped the SSD; prepared again at %s (%s)"
                  % (_iso(st.get("mtime", 0)), fact.get("marker")), _iso(st.get("mtime", 0)))
        else:
            c.add("local_ssd", "wipe_marker", "green", "no wipe recorded since local_ssd set it up")
    latency = obs.get("latency")
    if _ran(latency):
        if _failed(latency):
            c.add("local_ssd", "fdatasync_p99", "red", "could not measure fdatasync: %s" % _why(latency))
        else:
            p99 = (latency.get("latency") or {}).get("p99_ms")
            c.add("local_ssd", "fdatasync_p99", _ratio_status(p99, t["fdatasync_p99_amber_ms"],
                                                              t["fdatasync_p99_red_ms"]),
                  "fdatasync p99 %.1f ms on %s (etcd wants < %s ms)" % (p99 or 0, mount, t["fdatasync_p99_red_ms"]),
                  p99, t["fdatasync_p99_red_ms"])


def _on_ssd(c, area, fact, data, ssd_mount, ssd_fact):
    if not _ran(data) or _failed(data) or not ssd_fact:
        return
    st, mt = data.get("stat") or {}, (ssd_mount or {}).get("stat") or {}
    where = fact.get("data_dir")
    if not st.get("exists"):
        c.add(area, "data_on_ssd", "red", "data dir %s is missing" % where, None, ssd_fact.get("mount"))
    elif mt.get("exists") and st.get("dev") == mt.get("dev"):
        c.add(area, "data_on_ssd", "green", "data dir %s is on the local SSD (%s)" % (where, ssd_fact.get("mount")),
              where, ssd_fact.get("mount"))
    else:
        c.add(area, "data_on_ssd", "red", "data dir %s is not on the local SSD %s" % (where, ssd_fact.get("mount")),
              where, ssd_fact.get("mount"))


def _etcd(c, area, fact, result, t, name):
    if not fact or not _ran(result):
        return
    if _failed(result):
        c.add(area, "cluster", "red", "the cluster does not answer at %s: %s"
              % (", ".join(fact.get("endpoints") or fact.get("client_urls") or []), _why(result)))
        return
    members = result.get("members") or []
    mine = [m for m in members if name and m.get("name") == name]
    if not mine:
        c.add(area, "member", "red", "member %s is not in the member list (%s)"
              % (name, ", ".join(m.get("name") or m.get("id") for m in members)))
    elif not mine[0].get("healthy"):
        c.add(area, "member", "red", "member %s does not answer healthy" % name, False, True)
    else:
        c.add(area, "member", "green", "member %s healthy" % name, True, True)
    healthy, voting = result.get("healthy"), result.get("voting")
    if not result.get("has_quorum"):
        c.add(area, "quorum", "red", "%s of %s voting members healthy: no quorum, writes fail" % (healthy, voting),
              healthy, result.get("quorum"))
    elif not result.get("all_healthy"):
        c.add(area, "quorum", "amber", "%s of %s voting members healthy (quorum %s kept)"
              % (healthy, voting, result.get("quorum")), healthy, voting)
    else:
        c.add(area, "quorum", "green", "%s of %s voting members healthy" % (healthy, voting), healthy, voting)
    leader = result.get("leader_revision")
    if leader is None:
        c.add(area, "leader", "red", "no single leader answered")
    quota = int(fact.get("quota_backend_bytes") or result.get("quota_bytes") or 0)
    if mine and mine[0].get("db_size") is not None and quota:
        ratio = float(mine[0]["db_size"]) / quota
        c.add(area, "db_vs_quota", _ratio_status(ratio, t["etcd_db_amber"], t["etcd_db_red"]),
              "database %.1f MiB of quota %.1f MiB (%.0f %%) on %s" % (
                  mine[0]["db_size"] / 2.0 ** 20, quota / 2.0 ** 20, 100 * ratio, name),
              round(ratio, 4), t["etcd_db_red"])
        if leader is not None and mine[0].get("revision") is not None:
            lag = leader - int(mine[0]["revision"])
            c.add(area, "revision_lag", "amber" if lag > t["etcd_revision_lag_amber"] else "green",
                  "revision %s, %s behind the leader" % (mine[0]["revision"], lag), lag, t["etcd_revision_lag_amber"])
    by_id = dict((m.get("id"), m.get("name")) for m in members)
    for alarm in result.get("alarms") or []:
        owner = by_id.get(alarm.get("member_id"), alarm.get("member_id"))
        status = "red" if owner == name else "amber"
        c.add(area, "alarm", status, "alarm %s raised on member %s%s" % (alarm.get("alarm"), owner,
              " (etcd refuses writes)" if alarm.get("alarm") == "NOSPACE" else ""), alarm.get("alarm"))


def _snapshots(c, fact, found, t, now):
    if not fact or not fact.get("snapshot_dir"):
        return
    found = _read(c, "etcd", found, "the snapshots in %s" % fact["snapshot_dir"])
    if not found:
        return
    times = [f.get("mtime", 0) for f in found.get("files") or []]
    if not times:
        c.add("etcd", "snapshot", "red", "no snapshot in %s" % fact["snapshot_dir"], None, t["snapshot_red_hours"])
        return
    age = (now - max(times)) / 3600.0
    status = "red" if age > t["snapshot_red_hours"] else "amber" if age > t["snapshot_amber_hours"] else "green"
    c.add("etcd", "snapshot", status, "last snapshot %.1f h ago (%s) in %s"
          % (age, _iso(max(times)), fact["snapshot_dir"]), round(age, 2), t["snapshot_amber_hours"])


def _control_plane(c, obs, t):
    flags_result = _read(c, "control_plane", obs.get("apiserver"), "kube-apiserver's manifest")
    if not flags_result:
        return
    if not t.get("events_etcd_expected"):
        return
    overrides = (flags_result.get("flags") or {}).get("--etcd-servers-overrides") or ""
    try:
        urls = dict(parse_overrides(overrides)).get("/events")
    except PodError as exc:
        c.add("control_plane", "etcd_servers_overrides", "red", "kube-apiserver's --etcd-servers-overrides is not "
              "valid: %s" % exc, overrides, "/events#...")
        return
    if not urls:
        c.add("control_plane", "etcd_servers_overrides", "red", "kube-apiserver has no --etcd-servers-overrides "
              "for /events: Events go to the main etcd", overrides or None, "/events#...")
        return
    entry = "/events#" + ";".join(urls)
    c.add("control_plane", "etcd_servers_overrides", "green", "Events in their own etcd: %s" % entry,
          entry, "/events#...")
    answer = obs.get("overrides")
    if not _ran(answer):
        return
    servers = ", ".join(urls)
    if _failed(answer) or not answer.get("has_quorum"):
        c.add("control_plane", "events_etcd_answers", "red", "the Events etcd kube-apiserver writes to (%s) does "
              "not answer with kube-apiserver's client certificate: %s"
              % (servers, _why(answer) if _failed(answer) else "no quorum"))
    elif not answer.get("all_healthy"):
        c.add("control_plane", "events_etcd_answers", "amber", "%s of %s Events etcd members answer (%s)"
              % (answer.get("healthy"), answer.get("voting"), servers))
    else:
        c.add("control_plane", "events_etcd_answers", "green", "the Events etcd answers kube-apiserver's client "
              "certificate at %s" % servers)


def _kubeadm(c, obs):
    """What kubeadm upgrade would revert (kubescale.tuning.kubeadm_drift): one red check per setting the node runs and
    kubeadm's record (or an external etcd host's own file) does not carry; green when it carries them all."""
    result = _read(c, "kubeadm", obs.get("kubeadm"), "what kubeadm renders this node from")
    if not result or not result.get("sources"):
        return
    drift = result.get("drift") or []
    for d in drift:
        c.add("kubeadm", "%s %s" % (d.get("component"), d.get("setting")), "red", d.get("message"), d.get("node"),
              d.get("kubeadm"))
    if not drift:
        c.add("kubeadm", "upgrade_keeps_tunings", "green", "kubeadm renders what this node runs (%s)"
              % ", ".join(result["sources"]))


def _containerd_value(config, path_v2, path_v3):
    for path in (path_v3, path_v2):
        node = config
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return node
    return None


def _runtime(c, facts, obs):
    docker_fact, docker = facts.get("kubescale_docker_overlay2"), obs.get("docker")
    if docker_fact and _ran(docker):
        if _failed(docker) or docker.get("rc"):
            c.add("runtime", "dockerd", "red", "docker info failed: %s" % _why(docker))
        else:
            info = json.loads(docker.get("stdout") or "{}")
            wanted = [("DockerRootDir", docker_fact.get("data_root")), ("Driver", docker_fact.get("storage_driver")),
                      ("CgroupDriver", docker_fact.get("cgroup_driver")),
                      ("LiveRestoreEnabled", docker_fact.get("live_restore"))]
            for key, want in wanted:
                if want is None:
                    continue
                have = info.get(key)
                ok = str(have).lower() == str(want).lower()
                c.add("runtime", "docker " + key, "green" if ok else "red",
                      "dockerd reports %s %s%s" % (key, have, "" if ok else ", docker_overlay2 applied %s" % want),
                      have, want)
    ctd_fact, ctd = facts.get("kubescale_containerd_tuning"), obs.get("containerd")
    if ctd_fact and _ran(ctd):
        if _failed(ctd) or ctd.get("rc") or tomllib is None:
            c.add("runtime", "containerd", "red", "containerd config dump failed: %s" % _why(ctd))
        else:
            config = tomllib.loads(ctd.get("stdout") or "")
            wanted = [
                ("root", config.get("root"), ctd_fact.get("root")),
                ("max_concurrent_downloads", _containerd_value(
                    config, ("plugins", "io.containerd.grpc.v1.cri", "max_concurrent_downloads"),
                    ("plugins", "io.containerd.cri.v1.images", "max_concurrent_downloads")),
                 ctd_fact.get("max_concurrent_downloads")),
                ("sandbox_image", _containerd_value(
                    config, ("plugins", "io.containerd.grpc.v1.cri", "sandbox_image"),
                    ("plugins", "io.containerd.cri.v1.images", "pinned_images", "sandbox")),
                 ctd_fact.get("sandbox_image")),
            ]
            for key, have, want in wanted:
                if want is None:
                    continue
                ok = str(have) == str(want)
                c.add("runtime", "containerd " + key, "green" if ok else "red", "containerd runs with %s = %s%s"
                      % (key, have, "" if ok else ", containerd_tuning applied %s" % want), have, want)
    kubelet_fact, kubelet = facts.get("kubescale_kubelet_pulls"), obs.get("kubelet")
    if kubelet_fact and _ran(kubelet):
        path = kubelet_fact.get("config_path") or kubelet.get("source")
        if _failed(kubelet):
            c.add("runtime", "kubelet config", "red", "could not read %s: %s" % (path, _why(kubelet)))
        else:
            import yaml  # the controller has PyYAML: Ansible needs it
            config = yaml.safe_load(base64.b64decode(kubelet.get("content") or "")) or {}
            wanted = [("serializeImagePulls", kubelet_fact.get("serialize_image_pulls")),
                      ("maxParallelImagePulls", kubelet_fact.get("max_parallel_image_pulls"))]
            for key, want in wanted:
                if want in (None, ""):
                    continue
                have = config.get(key)
                ok = str(have).lower() == str(want).lower()
                c.add("runtime", "kubelet " + key, "green" if ok else "red", "%s has %s: %s%s" % (
                    path, key, have, "" if ok else ", kubelet_pulls applied %s (rewritten? kubeadm join writes it "
                    "from the kubelet-config ConfigMap)" % want), have, want)
    images_fact, images = facts.get("kubescale_image_preload"), obs.get("images")
    if images_fact and _ran(images):
        if _failed(images):
            c.add("runtime", "preloaded images", "red", "could not compare %s with the store: %s"
                  % (images_fact.get("archive"), _why(images)))
        elif images.get("loaded"):
            c.add("runtime", "preloaded images", "red", "not in the %s store with the archive's digest: %s (archive %s)"
                  % (images.get("runtime"), ", ".join(images["loaded"]), images_fact.get("archive")),
                  images.get("loaded"), [])
        else:
            c.add("runtime", "preloaded images", "green", "%d images present by digest" % len(images.get("kept") or []),
                  len(images.get("kept") or []))
    units = obs.get("units")
    if _ran(units):
        for r in units.get("results") or []:
            if r.get("skipped"):
                continue
            unit = r.get("item") or r.get("name")
            if _failed(r):
                c.add("boot", unit, "red", "%s: %s" % (unit, _why(r)))
            elif r.get("changed"):
                state = (r.get("status") or {}).get("UnitFileState")
                c.add("boot", unit, "red", "%s is not enabled (%s): it will not run at the next boot" % (unit, state),
                      state, "enabled")
            else:
                c.add("boot", unit, "green", "%s enabled" % unit, "enabled", "enabled")


# --------------------------------------------------------------------------- the report

def evaluate(host, node_class, observed, thresholds=None, now=None):
    """The checks of one node. `observed`: NAMES -> registered results, plus `facts` (the kubescale_* local facts);
    None for a node that has no audit data (unreachable, or a task failed): one red check says so."""
    t = dict(DEFAULT_THRESHOLDS, **(thresholds or {}))
    c = _Checks(host, node_class)
    if observed is None:
        c.add("audit", "reachable", "red", "no audit data: the node was unreachable or a read failed (see the run)")
        return c.items
    if _failed(observed.get("setup")):
        c.add("audit", "reachable", "red", "the node could not be read: %s" % _why(observed["setup"]))
        return c.items
    facts = observed.get("facts") or {}
    _sysctl(c, facts, observed)
    _neigh(c, observed, t)
    _ssd(c, facts, observed, t)
    etcd_fact, events_fact, ssd_fact = (facts.get("kubescale_etcd_local_disk"), facts.get("kubescale_events_etcd"),
                                        facts.get("kubescale_local_ssd"))
    _etcd(c, "etcd", etcd_fact, observed.get("etcd"), t, (etcd_fact or {}).get("name"))
    if etcd_fact:
        _on_ssd(c, "etcd", etcd_fact, observed.get("etcd_data"), observed.get("ssd_mount"), ssd_fact)
        _snapshots(c, etcd_fact, observed.get("etcd_snapshots"), t, now if now is not None else _now())
    _etcd(c, "etcd_events", events_fact, observed.get("events"), t, (events_fact or {}).get("name"))
    if events_fact:
        _on_ssd(c, "etcd_events", events_fact, observed.get("events_data"), observed.get("ssd_mount"), ssd_fact)
    _control_plane(c, observed, t)
    _kubeadm(c, observed)
    _runtime(c, facts, observed)
    if not c.items:
        c.add("audit", "tunings", "amber", "no kubescale tuning recorded on this node (no local facts): not converged?")
    return c.items


def _now():
    return (datetime.datetime.now(datetime.timezone.utc)
            - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)).total_seconds()


def document(nodes, thresholds=None, generated_at=None, check_mode=False):
    """The report: `nodes` maps host -> (class, checks)."""
    t = dict(DEFAULT_THRESHOLDS, **(thresholds or {}))
    classes, out_nodes, failing = {}, {}, []
    for host in sorted(nodes):
        node_class, checks = nodes[host]
        status = _worst(c["status"] for c in checks)
        out_nodes[host] = {"class": node_class, "status": status, "checks": checks}
        summary = classes.setdefault(node_class or "none", {"nodes": 0, "green": 0, "amber": 0, "red": 0,
                                                            "checks": {"green": 0, "amber": 0, "red": 0}})
        summary["nodes"] += 1
        summary[status] += 1
        for check in checks:
            summary["checks"][check["status"]] += 1
            if check["status"] != "green":
                failing.append(check)
    order = dict((cls, i) for i, cls in enumerate(CLASSES))
    failing.sort(key=lambda c: (-STATUSES.index(c["status"]), order.get(c["class"], 99), c["node"], c["area"]))
    totals = dict((s, sum(1 for n in out_nodes.values() if n["status"] == s)) for s in STATUSES)
    return {
        "schema": SCHEMA,
        "generated_at": generated_at or _iso(_now()),
        "check_mode": bool(check_mode),
        "thresholds": t,
        "totals": dict(totals, nodes=len(out_nodes)),
        "classes": dict(sorted(classes.items(), key=lambda kv: order.get(kv[0], 99))),
        "failing": failing,
        "nodes": out_nodes,
    }
