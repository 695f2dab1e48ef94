# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Private: etcd sizes, membership and health as data (standard library only; etcdctl v3 through a runner)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
import time
from collections import namedtuple
from typing import Callable, List, NamedTuple, Optional

DEFAULT_QUOTA = 2 * 1024 ** 3
# etcd's documentation: "8 GiB is a suggested maximum size for normal environments".
SUGGESTED_MAX_QUOTA = 8 * 1024 ** 3

_UNITS = {
    "": 1,
    "k": 1000, "m": 1000 ** 2, "g": 1000 ** 3, "t": 1000 ** 4,
    "ki": 1024, "mi": 1024 ** 2, "gi": 1024 ** 3, "ti": 1024 ** 4,
}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgtKMGT]i?)?[bB]?\s*$")
SIZE_HELP = ("a whole number of bytes, or a number with a unit: K, M, G, T (powers of 1000; KB, MB, GB, TB too) "
             "or Ki, Mi, Gi, Ti (powers of 1024; KiB, MiB, GiB, TiB too), e.g. 8GiB")


def parse_bytes(value):
    """Bytes in `value` (int, or text such as '8GiB', '8Gi', '8G', '8589934592'); ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError("%r is not a size: give %s" % (value, SIZE_HELP))
    if isinstance(value, int):
        number, unit = value, ""
    else:
        match = _SIZE.match(str(value))
        if not match:
            raise ValueError("%r is not a size: give %s" % (value, SIZE_HELP))
        number, unit = match.group(1), (match.group(2) or "").lower()
        number = float(number) if "." in number else int(number)
    size = int(number * _UNITS[unit])
    if size != number * _UNITS[unit]:
        raise ValueError("%r is not a whole number of bytes" % (value,))
    if size <= 0:
        raise ValueError("%r must be more than 0 bytes" % (value,))
    return size


def quorum(members):
    """Votes a cluster of `members` voting members needs."""
    return members // 2 + 1


def member_id(value):
    """etcdctl's JSON carries IDs as unsigned decimals; member commands take them in hex."""
    return "%x" % int(value)


def parse_member_list(text):
    """`etcdctl member list -w json` → [{id, name, peer_urls, client_urls, learner}] (name '' = not started)."""
    data = json.loads(text)
    members = []
    for m in data.get("members", []):
        members.append(dict(
            id=member_id(m["ID"]), name=m.get("name", ""), peer_urls=list(m.get("peerURLs", [])),
            client_urls=list(m.get("clientURLs", [])), learner=bool(m.get("isLearner", False))))
    return members


def _json_list(text):
    """etcdctl prints a JSON list (or nothing, when every endpoint failed); anything after it is ignored."""
    text = text.strip()
    if not text:
        return []
    try:
        value, _end = json.JSONDecoder().raw_decode(text)
    except ValueError:
        return []
    return value if isinstance(value, list) else [value]


def parse_endpoint_status(text):
    """`etcdctl endpoint status -w json` → [{endpoint, member_id, leader, revision, db_size, raft_index}]."""
    out = []
    for e in _json_list(text):
        st = e.get("Status", {})
        header = st.get("header", {})
        out.append(dict(
            endpoint=e.get("Endpoint", ""), member_id=member_id(header.get("member_id", 0)),
            leader=member_id(st.get("leader", 0)), revision=int(header.get("revision", 0)),
            db_size=int(st.get("dbSize", 0)), db_size_in_use=int(st.get("dbSizeInUse", 0)),
            raft_index=int(st.get("raftIndex", 0)), version=st.get("version", "")))
    return out


def parse_endpoint_health(text):
    """`etcdctl endpoint health -w json` → {endpoint: (healthy, error)}."""
    return dict((e.get("endpoint", ""), (bool(e.get("health")), e.get("error", "")))
                for e in _json_list(text))


def parse_alarms(text):
    """`etcdctl alarm list` lines ('memberID:123 alarm:NOSPACE ') → [{member_id, alarm}]."""
    alarms = []
    for line in text.splitlines():
        match = re.match(r"^\s*memberID:(\d+)\s+alarm:(\S+)", line)
        if match:
            alarms.append(dict(member_id=member_id(match.group(1)), alarm=match.group(2)))
    return alarms


def parse_initial_cluster(text):
    """The ETCD_INITIAL_CLUSTER value `etcdctl member add` prints for the new member's first start."""
    for line in text.splitlines():
        match = re.match(r'^ETCD_INITIAL_CLUSTER="(.*)"\s*$', line.strip())
        if match:
            return match.group(1)
    return None


def is_member(m, name, peer_urls=()):
    """Member `m` is the one named `name`, or (not started yet, so nameless) the one at `peer_urls`."""
    return (bool(name) and m["name"] == name) or bool(set(m["peer_urls"]) & set(peer_urls or ()))


def assess(members, health, statuses, name, peer_urls=()):
    """Cluster health as data, and whether member `name` may be stopped without losing quorum.

    `health` maps client URL → (healthy, error) and `statuses` is parse_endpoint_status' list.
    A member counts as healthy when one of its client URLs answered healthy.
    """
    voting = [m for m in members if not m["learner"]]
    by_id = dict((s["member_id"], s) for s in statuses)
    rows = []
    for m in members:
        answers = [health[u] for u in m["client_urls"] if u in health]
        healthy = any(a[0] for a in answers)
        error = "; ".join(a[1] for a in answers if a[1]) or ("" if healthy else "no answer")
        st = by_id.get(m["id"], {})
        rows.append(dict(m, healthy=healthy, error=error, revision=st.get("revision"),
                         db_size=st.get("db_size"), started=bool(m["name"])))
    leaders = set(s["leader"] for s in statuses if s["leader"] != "0")
    leader = leaders.pop() if len(leaders) == 1 else None
    leader_rev = by_id.get(leader, {}).get("revision") if leader else None
    need = quorum(len(voting))
    healthy_voting = [r for r in rows if r["healthy"] and not r["learner"]]
    others = [r for r in healthy_voting if not is_member(r, name, peer_urls)]
    me = [r for r in rows if is_member(r, name, peer_urls)]
    return dict(
        members=rows, voting=len(voting), healthy=len(healthy_voting), quorum=need,
        has_quorum=len(healthy_voting) >= need, all_healthy=len(healthy_voting) == len(voting) and bool(voting),
        leader=leader, leader_revision=leader_rev, member_present=bool(me),
        member=me[0] if me else None,
        healthy_without_member=len(others), can_stop_member=len(others) >= need,
        db_size=max([s["db_size"] for s in statuses] or [0]))


class Etcdctl(object):
    """etcdctl v3 argv built in one place (endpoints and TLS files), run through `run(argv) -> (rc, out, err)`."""

    def __init__(self, run, binary="etcdctl", endpoints=(), cacert=None, cert=None, key=None, timeout=5):
        self.run = run
        self.binary = binary
        self.endpoints = list(endpoints)
        self.tls = []
        for flag, value in (("--cacert", cacert), ("--cert", cert), ("--key", key)):
            if value:
                self.tls.append("%s=%s" % (flag, value))
        self.timeout = timeout

    def argv(self, args, endpoints=None):
        eps = self.endpoints if endpoints is None else endpoints
        return ([self.binary, "--endpoints=" + ",".join(eps), "--command-timeout=%ds" % self.timeout,
                 "--dial-timeout=%ds" % min(self.timeout, 3)] + self.tls + list(args))

    def call(self, args, endpoints=None):
        return self.run(self.argv(args, endpoints))

    def member_list(self, endpoints=None):
        rc, out, err = self.call(["member", "list", "-w", "json"], endpoints)
        if rc != 0:
            raise EtcdError("etcdctl member list failed: %s" % (err.strip() or out.strip()))
        return parse_member_list(out)

    def health(self, urls):
        if not urls:
            return {}
        _rc, out, _err = self.call(["endpoint", "health", "-w", "json"], urls)
        found = parse_endpoint_health(out)
        for url in urls:
            found.setdefault(url, (False, "no answer"))
        return found

    def status(self, urls):
        if not urls:
            return []
        _rc, out, _err = self.call(["endpoint", "status", "-w", "json"], urls)
        return parse_endpoint_status(out)

    def alarms(self, endpoints=None):
        rc, out, err = self.call(["alarm", "list"], endpoints)
        if rc != 0:
            raise EtcdError("etcdctl alarm list failed: %s" % (err.strip() or out.strip()))
        return parse_alarms(out)

    def alarm_disarm(self, endpoints=None):
        rc, out, err = self.call(["alarm", "disarm"], endpoints)
        if rc != 0:
            raise EtcdError("etcdctl alarm disarm failed: %s" % (err.strip() or out.strip()))

    def member_remove(self, ident, endpoints=None):
        rc, out, err = self.call(["member", "remove", ident], endpoints)
        if rc != 0:
            raise EtcdError("etcdctl member remove %s failed: %s" % (ident, err.strip() or out.strip()))

    def member_add(self, name, peer_urls, endpoints=None):
        rc, out, err = self.call(["member", "add", name, "--peer-urls=" + ",".join(peer_urls)], endpoints)
        if rc != 0:
            raise EtcdError("etcdctl member add %s failed: %s" % (name, err.strip() or out.strip()))
        return parse_initial_cluster(out)


class EtcdError(Exception):
    pass


def survey(ctl, name, endpoints=None, peer_urls=()):
    """Members (from the first endpoint that answers), their health and status, assessed for member `name`."""
    last = None
    for ep in (endpoints if endpoints is not None else ctl.endpoints):
        try:
            members = ctl.member_list([ep])
            break
        except EtcdError as exc:
            last = exc
    else:
        raise EtcdError("no endpoint answered (%s): %s" % (", ".join(endpoints or ctl.endpoints), last))
    urls = sorted(set(u for m in members for u in m["client_urls"]))
    health = ctl.health(urls)
    statuses = ctl.status([u for u in urls if health.get(u, (False,))[0]])
    return assess(members, health, statuses, name, peer_urls)


# NOSPACE is raised when a write would take the database to the quota, so a database just under it is still full:
# disarmed only with this share of the quota free, and never less than NOSPACE_HEADROOM_BYTES - a few of the largest
# writes etcd takes (its --max-request-bytes is 1.5 MiB by default): a small quota's 5 % is less than one such write,
# and the next one would raise the alarm again at once.
NOSPACE_HEADROOM = 0.05
NOSPACE_HEADROOM_BYTES = 8 * 1024 * 1024


def nospace_verdict(alarms, db_size, quota):
    """Whether raised alarms may be disarmed so writes go on: (disarm, reason).

    Only NOSPACE, and only once the largest member database leaves NOSPACE_HEADROOM of `quota` free, and at least
    NOSPACE_HEADROOM_BYTES (the quota was raised, or the database compacted and defragmented): disarming earlier would
    be raised again by the next writes. Any other alarm (CORRUPT) is left for a person.
    """
    kinds = sorted(set(a["alarm"] for a in alarms))
    if not kinds:
        return False, "no alarm raised"
    if kinds != ["NOSPACE"]:
        return False, "alarms %s raised: only NOSPACE is disarmed here; the others need a person" % ", ".join(kinds)
    headroom = max(quota * NOSPACE_HEADROOM, NOSPACE_HEADROOM_BYTES)
    if db_size > quota - headroom:
        return False, ("NOSPACE stays: the database (%d bytes) leaves less than %d bytes (%d%% of the quota, at least "
                       "%d MiB) of the quota (%d bytes) free; raise the quota, or compact and defragment, first"
                       % (db_size, headroom, NOSPACE_HEADROOM * 100, NOSPACE_HEADROOM_BYTES >> 20, quota))
    return True, "NOSPACE disarmed: the database (%d bytes) is well below the quota (%d bytes)" % (db_size, quota)


def initial_cluster(members, name, peer_urls):
    """ETCD_INITIAL_CLUSTER for member `name` joining `members` (itself listed nameless until it starts)."""
    pairs = []
    for m in members:
        member_name = name if is_member(m, name, peer_urls) else m["name"]
        for url in m["peer_urls"]:
            pairs.append("%s=%s" % (member_name, url))
    return ",".join(pairs)


class HealthAnswer(namedtuple("HealthAnswer", "url status body error")):
    """One answer to GET <client URL>/health: the HTTP status (-1 when none came), the body, and why there was no
    healthy answer when the request itself failed (the error, with etcd's body when it sent one)."""


def health_failure(answer):
    """'' when `answer` is etcd's healthy {"health": "true"}, else `url: why`."""
    if answer.status != 200:
        return "%s: %s" % (answer.url, answer.error or "no answer (status %s)" % answer.status)
    try:
        body = json.loads(answer.body or "")
    except ValueError:
        return "%s: /health answered %r, not JSON" % (answer.url, (answer.body or "")[:80])
    if not isinstance(body, dict) or str(body.get("health")).lower() != "true":
        return "%s: unhealthy (%s)" % (answer.url, body.get("reason") if isinstance(body, dict) and body.get("reason")
                                       else json.dumps(body))
    return ""


class RejoinPlan(NamedTuple):
    """What state=rejoined does for a member: `action` is "none" (it answers healthy), "refused" (the others lack the
    quorum to commit a remove and an add: `message` says why), "add" (the cluster does not list it), "replace" (remove
    its stale entry `remove_id`, then add it) or "added_before" (a run that died after `member add` left it listed,
    nameless: it starts as it is); `through` the healthy peers' client URLs."""

    action: str
    remove_id: Optional[str]
    through: List[str]
    message: str


def plan_rejoin(info: dict, name: str, peer_urls: List[str]) -> RejoinPlan:
    """The rejoin of member `name` from a survey (`info`); reads nothing."""
    me = info["member"]
    if me and me["healthy"] and me["started"]:
        return RejoinPlan("none", None, [], "member %s answers healthy: nothing to do" % name)
    if info["healthy_without_member"] < info["quorum"]:
        return RejoinPlan("refused", None, [], (
            "member %s cannot be re-added: only %d of the other members answer healthy and the cluster needs %d "
            "votes, so removing and adding it would not be committed. Bring the other members back first; if "
            "they are lost, restore every member from a snapshot (etcdctl snapshot restore) as a new cluster."
            % (name, info["healthy_without_member"], info["quorum"])))
    through = [u for r in info["members"] if r["healthy"] and not is_member(r, name, peer_urls)
               for u in r["client_urls"]]
    if me and me["started"]:
        return RejoinPlan("replace", me["id"], through, "member %s: stale entry %s removed, added again"
                          % (name, me["id"]))
    if me:
        return RejoinPlan("added_before", None, through, "member %s was added before; it starts as it is" % name)
    return RejoinPlan("add", None, through, "member %s added again" % name)


# etcd's answers when another run already did a step (its controller died, but its module - or that module's
# etcdctl - went on on the node): the stale entry is gone, or the member is listed again under its peer URLs.
MEMBER_NOT_FOUND = "etcdserver: member not found"
PEER_URLS_EXIST = "etcdserver: Peer URLs already exists"
# ... or, the member listed unstarted beside the others, the add of one more voting member refused first:
NOT_ENOUGH_STARTED = "etcdserver: re-configuration failed due to not enough started members"


def rejoin(ctl: "Etcdctl", plan: RejoinPlan, name: str, peer_urls: List[str]) -> List[dict]:
    """Carry out a RejoinPlan of action add, replace or added_before; the member list after it. A step another run
    already took (its controller gone, its module or etcdctl not) counts as done: the stale entry not found, or the
    member already listed (unstarted) at `peer_urls`. Raises RejoinError naming the member."""
    removed = None
    try:
        if plan.action == "replace":
            try:
                ctl.member_remove(plan.remove_id, plan.through)
            except EtcdError as exc:
                if MEMBER_NOT_FOUND not in str(exc):
                    raise
            removed = plan.remove_id
        if plan.action in ("replace", "add"):
            try:
                ctl.member_add(name, peer_urls, plan.through)
            except EtcdError as exc:
                if PEER_URLS_EXIST not in str(exc) and NOT_ENOUGH_STARTED not in str(exc):
                    raise
                listed = [m for m in ctl.member_list(plan.through) if is_member(m, "", peer_urls)]
                if not listed or any(m["name"] for m in listed):
                    raise
        return ctl.member_list(plan.through)
    except EtcdError as exc:
        raise RejoinError("member %s: %s" % (name, exc), removed) from None


class RejoinError(EtcdError):
    """A rejoin that stopped part way: `removed` is the stale member ID it removed before it stopped (or None)."""

    def __init__(self, msg, removed):
        super().__init__(msg)
        self.removed = removed


class CatchUp(NamedTuple):
    """The end of a wait for a member to catch up: `done`, the leader revision it had to reach, the last survey."""

    done: bool
    target: Optional[int]
    info: dict


def wait_caught_up(look: Callable[[], dict], info: dict, timeout: float, sleep=time.sleep,
                   clock=time.time) -> CatchUp:
    """Until the member `info` describes answers healthy at (or past) the leader's revision seen when the wait began,
    surveying again with `look()` every second (a survey that fails is retried); done False after `timeout`."""
    deadline = clock() + timeout
    target = info["leader_revision"]
    while True:
        me = info["member"]
        if me and me["healthy"] and target is not None and (me["revision"] or 0) >= target:
            return CatchUp(True, target, info)
        if clock() > deadline:
            return CatchUp(False, target, info)
        sleep(1)
        try:
            info = look()
        except EtcdError:
            continue
        if target is None:
            target = info["leader_revision"]
