"""etcd sizes, etcdctl 3.4 output parsing and the quorum arithmetic the roles decide on."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.kubescale.tuning.plugins.filter.etcd import etcd_bytes, etcd_bytes_error
from ansible_collections.kubescale.tuning.plugins.module_utils.etcd import cluster as e

# Real etcdctl 3.4.23 output from the lab's three-member cluster.
MEMBERS = ('{"header":{"cluster_id":10212111345595628082,"member_id":368625948980461576,"raft_term":2},"members":['
           '{"ID":368625948980461576,"name":"etcd-1","peerURLs":["http://172.30.213.10:2380"],'
           '"clientURLs":["http://172.30.213.10:2379"]},'
           '{"ID":2880850053003620739,"name":"etcd-3","peerURLs":["http://172.30.213.12:2380"],'
           '"clientURLs":["http://172.30.213.12:2379"]},'
           '{"ID":4463234664538868973,"name":"etcd-2","peerURLs":["http://172.30.213.11:2380"],'
           '"clientURLs":["http://172.30.213.11:2379"]}]}')
STATUS = ('[{"Endpoint":"http://172.30.213.10:2379","Status":{"header":{"cluster_id":10212111345595628082,'
          '"member_id":368625948980461576,"revision":301,"raft_term":2},"version":"3.4.23","dbSize":53248,'
          '"leader":368625948980461576,"raftIndex":308,"raftTerm":2,"raftAppliedIndex":308,"dbSizeInUse":53248}},'
          '{"Endpoint":"http://172.30.213.12:2379","Status":{"header":{"cluster_id":10212111345595628082,'
          '"member_id":2880850053003620739,"revision":299,"raft_term":2},"version":"3.4.23","dbSize":61440,'
          '"leader":368625948980461576,"raftIndex":306,"raftTerm":2,"raftAppliedIndex":306,"dbSizeInUse":53248}}]')
HEALTH = ('[{"endpoint":"http://172.30.213.10:2379","health":true,"took":"6.722847ms"},'
          '{"endpoint":"http://172.30.213.12:2379","health":true,"took":"10.508362ms"},'
          '{"endpoint":"http://172.30.213.11:2379","health":false,"took":"5s",'
          '"error":"context deadline exceeded"}]\nError: unhealthy cluster\n')


@pytest.mark.parametrize("value,size", [
    ("8GiB", 8 * 1024 ** 3), ("8Gi", 8 * 1024 ** 3), ("8G", 8 * 1000 ** 3), ("8GB", 8 * 1000 ** 3),
    ("512MiB", 512 * 1024 ** 2), ("8589934592", 8589934592), (8589934592, 8589934592), ("1.5Gi", 1610612736),
    (" 4 GiB ", 4 * 1024 ** 3), ("1ki", 1024),
])
def test_sizes(value, size):
    assert e.parse_bytes(value) == size
    assert etcd_bytes(value) == size
    assert etcd_bytes_error(value) == ""


@pytest.mark.parametrize("value", ["8X", "-1", "0", "", "GiB", "8 GiBs", "1.5", True, "8e9", "0.1"])
def test_bad_sizes(value):
    with pytest.raises(ValueError):
        e.parse_bytes(value)
    with pytest.raises(AnsibleFilterError):
        etcd_bytes(value)
    assert "allowed" in etcd_bytes_error(value) or "bytes" in etcd_bytes_error(value)


def test_quorum():
    assert [e.quorum(n) for n in (1, 2, 3, 4, 5)] == [1, 2, 2, 3, 3]


def test_member_list_ids_are_hex():
    members = e.parse_member_list(MEMBERS)
    assert [m["name"] for m in members] == ["etcd-1", "etcd-3", "etcd-2"]
    assert members[0]["id"] == "51d9f58f7f8c008"  # what `etcdctl member list` prints and `member remove` takes
    assert members[0]["client_urls"] == ["http://172.30.213.10:2379"]


def test_health_tolerates_the_trailing_error():
    health = e.parse_endpoint_health(HEALTH)
    assert health["http://172.30.213.11:2379"] == (False, "context deadline exceeded")
    assert health["http://172.30.213.10:2379"] == (True, "")
    assert e.parse_endpoint_health("") == {}


def test_assess_one_member_down():
    members = e.parse_member_list(MEMBERS)
    info = e.assess(members, e.parse_endpoint_health(HEALTH), e.parse_endpoint_status(STATUS), "etcd-1")
    assert (info["voting"], info["healthy"], info["quorum"]) == (3, 2, 2)
    assert info["has_quorum"] and not info["all_healthy"]
    # stopping etcd-1 would leave etcd-3 alone: 1 < 2
    assert info["healthy_without_member"] == 1 and not info["can_stop_member"]
    assert info["leader"] == "51d9f58f7f8c008" and info["leader_revision"] == 301
    assert info["member"]["revision"] == 301 and info["db_size"] == 61440
    down = e.assess(members, e.parse_endpoint_health(HEALTH), e.parse_endpoint_status(STATUS), "etcd-2")
    # etcd-2 is the one down: the other two are healthy, so it may be stopped (or re-added)
    assert down["healthy_without_member"] == 2 and down["can_stop_member"]


def test_nameless_member_is_found_by_peer_url():
    members = e.parse_member_list(MEMBERS)
    members[2]["name"] = ""  # added, not started yet
    info = e.assess(members, {}, [], "etcd-2", ["http://172.30.213.11:2380"])
    assert info["member_present"] and not info["member"]["started"]
    assert e.initial_cluster(members, "etcd-2", ["http://172.30.213.11:2380"]) == (
        "etcd-1=http://172.30.213.10:2380,etcd-3=http://172.30.213.12:2380,etcd-2=http://172.30.213.11:2380")


def test_alarms():
    assert e.parse_alarms("memberID:368625948980461576 alarm:NOSPACE \n") == [
        {"member_id": "51d9f58f7f8c008", "alarm": "NOSPACE"}]
    assert e.parse_alarms("") == []


def test_etcdctl_argv_and_survey():
    calls = []

    def run(argv):
        calls.append(argv)
        if "member" in argv:
            return 0, MEMBERS, ""
        if "health" in argv:
            return 1, HEALTH, "unhealthy cluster"
        return 0, STATUS, ""

    ctl = e.Etcdctl(run, "etcdctl", ["https://a:2379"], cacert="/ca", cert="/c", key="/k", timeout=5)
    info = e.survey(ctl, "etcd-1")
    assert calls[0] == ["etcdctl", "--endpoints=https://a:2379", "--command-timeout=5s", "--dial-timeout=3s",
                        "--cacert=/ca", "--cert=/c", "--key=/k", "member", "list", "-w", "json"]
    # health asked of every member's client URL in one call; status only of the healthy ones
    assert calls[1][1] == "--endpoints=http://172.30.213.10:2379,http://172.30.213.11:2379,http://172.30.213.12:2379"
    assert "http://172.30.213.11:2379" not in calls[2][1]
    assert info["healthy"] == 2


def test_survey_without_any_answer():
    ctl = e.Etcdctl(lambda argv: (1, "", "connection refused"), "etcdctl", ["http://a:2379", "http://b:2379"])
    with pytest.raises(e.EtcdError, match="no endpoint answered"):
        e.survey(ctl, "x")


def test_nospace_is_disarmed_only_below_the_quota_and_only_nospace():
    nospace = [{"member_id": "a", "alarm": "NOSPACE"}, {"member_id": "b", "alarm": "NOSPACE"}]
    mb = 1024 * 1024  # a 1,000 MiB quota: 5 % (50 MiB) is more than the 8 MiB floor
    assert e.nospace_verdict([], 10 * mb, 1000 * mb) == (False, "no alarm raised")
    disarm, why = e.nospace_verdict(nospace, 10 * mb, 1000 * mb)
    assert disarm and "well below the quota" in why
    assert e.nospace_verdict(nospace, 950 * mb, 1000 * mb)[0]
    for full in (951, 1000, 1200):  # a database just under the quota is still full: the next write raises it again
        disarm, why = e.nospace_verdict(nospace, full * mb, 1000 * mb)
        assert not disarm and "raise the quota, or compact" in why
    disarm, why = e.nospace_verdict(nospace + [{"member_id": "a", "alarm": "CORRUPT"}], 10 * mb, 1000 * mb)
    assert not disarm and "CORRUPT" in why


def test_nospace_stays_while_a_small_quota_has_less_free_than_a_few_large_writes():
    """A 20 MiB quota's 5 % is 1 MiB, less than one 1.5 MiB write: the headroom is 8 MiB there (CI saw a database one
    1 MiB ConfigMap short of a small quota disarmed, and the next write raise NOSPACE again)."""
    nospace = [{"member_id": "a", "alarm": "NOSPACE"}]
    mib = 1024 * 1024
    quota = 20 * mib
    for db in (quota - mib - 4096, quota - 8 * mib + 1):
        disarm, why = e.nospace_verdict(nospace, db, quota)
        assert not disarm and "at least 8 MiB" in why, why
    assert e.nospace_verdict(nospace, quota - 8 * mib, quota)[0]
    # at 8 GiB the share is the larger: 5 % is 409.6 MiB
    big = 8 * 1024 * mib
    assert not e.nospace_verdict(nospace, int(big * 0.95) + 1, big)[0]
    assert e.nospace_verdict(nospace, int(big * 0.95), big)[0]


def test_alarm_disarm_argv_and_failure():
    calls = []

    def run(argv):
        calls.append(argv)
        return (1, "", "context deadline exceeded") if len(calls) > 1 else (0, "", "")

    ctl = e.Etcdctl(run, "etcdctl", ["https://a:2379"], cacert="/ca", cert="/c", key="/k")
    ctl.alarm_disarm()
    assert calls[0][-2:] == ["alarm", "disarm"] and "--cert=/c" in calls[0]
    with pytest.raises(e.EtcdError, match="alarm disarm failed: context deadline exceeded"):
        ctl.alarm_disarm(["https://b:2379"])
    assert calls[1][1] == "--endpoints=https://b:2379"


def test_health_failure_reads_each_answer():
    from ansible_collections.kubescale.tuning.plugins.module_utils.etcd.cluster import HealthAnswer, health_failure
    answers = [
        HealthAnswer("https://a:2383", 200, '{"health":"true","reason":""}', ""),
        HealthAnswer("https://b:2383", 503, '{"health":"false","reason":"RAFT NO LEADER"}', ""),
        HealthAnswer("https://c:2383", -1, "", "Connection refused"),
        HealthAnswer("https://d:2383", 200, '{"health":"false","reason":"NOSPACE"}', ""),
        HealthAnswer("https://e:2383", 200, "<html>", ""),
    ]
    assert [health_failure(a) for a in answers] == [
        "",
        "https://b:2383: no answer (status 503)",
        "https://c:2383: Connection refused",
        "https://d:2383: unhealthy (NOSPACE)",
        "https://e:2383: /health answered '<html>', not JSON",
    ]


def _survey(health_text=HEALTH, name="etcd-2", peer_urls=()):
    members = e.parse_member_list(MEMBERS)
    return e.assess(members, e.parse_endpoint_health(health_text), e.parse_endpoint_status(STATUS), name, peer_urls)


def test_rejoin_plan_replaces_a_started_member_that_does_not_answer_through_its_healthy_peers():
    plan = e.plan_rejoin(_survey(), "etcd-2", ["http://172.30.213.11:2380"])
    assert plan.action == "replace" and plan.remove_id == e.member_id(4463234664538868973)
    assert plan.through == ["http://172.30.213.10:2379", "http://172.30.213.12:2379"]


def test_rejoin_plan_leaves_a_healthy_member_and_refuses_without_the_others_quorum():
    assert e.plan_rejoin(_survey(name="etcd-1"), "etcd-1", ["http://172.30.213.10:2380"]).action == "none"
    only_one = HEALTH.replace('"http://172.30.213.12:2379","health":true', '"http://172.30.213.12:2379","health":false')
    refused = e.plan_rejoin(_survey(only_one), "etcd-2", ["http://172.30.213.11:2380"])
    assert refused.action == "refused" and "only 1 of the other members answer healthy" in refused.message


def test_rejoin_plan_adds_an_unlisted_member_and_starts_one_added_before():
    members = [m for m in e.parse_member_list(MEMBERS) if m["name"] != "etcd-2"]
    info = e.assess(members, e.parse_endpoint_health(HEALTH), e.parse_endpoint_status(STATUS), "etcd-2",
                    ["http://172.30.213.11:2380"])
    assert e.plan_rejoin(info, "etcd-2", ["http://172.30.213.11:2380"]).action == "add"
    nameless = [dict(m, name="") if m["name"] == "etcd-2" else m for m in e.parse_member_list(MEMBERS)]
    info = e.assess(nameless, e.parse_endpoint_health(HEALTH), e.parse_endpoint_status(STATUS), "etcd-2",
                    ["http://172.30.213.11:2380"])
    assert e.plan_rejoin(info, "etcd-2", ["http://172.30.213.11:2380"]).action == "added_before"


class _Ctl:
    def __init__(self, fail_add=False):
        self.calls, self.fail_add = [], fail_add

    def member_remove(self, member, eps):
        self.calls.append(("remove", member, tuple(eps)))

    def member_add(self, name, peers, eps):
        self.calls.append(("add", name, tuple(peers)))
        if self.fail_add:
            raise e.EtcdError("etcdserver: unhealthy cluster")

    def member_list(self, eps):
        return ["listed"]


def test_rejoin_carries_out_the_plan_and_names_what_it_removed_when_the_add_fails():
    plan = e.plan_rejoin(_survey(), "etcd-2", ["http://172.30.213.11:2380"])
    ctl = _Ctl()
    assert e.rejoin(ctl, plan, "etcd-2", ["http://172.30.213.11:2380"]) == ["listed"]
    assert [c[0] for c in ctl.calls] == ["remove", "add"]
    with pytest.raises(e.RejoinError) as err:
        e.rejoin(_Ctl(fail_add=True), plan, "etcd-2", ["http://172.30.213.11:2380"])
    assert err.value.removed == plan.remove_id and "member etcd-2: etcdserver: unhealthy cluster" in str(err.value)
    started = e.RejoinPlan("added_before", None, ["http://172.30.213.10:2379"], "")
    ctl = _Ctl()
    e.rejoin(ctl, started, "etcd-2", [])
    assert ctl.calls == []


class _Raced(_Ctl):
    """etcd as a run killed inside its rejoin left it: that run's etcdctl removed the stale entry and added the member
    (unstarted, nameless) after this run's survey read the member list."""

    def __init__(self, listed_name="", add_error=e.PEER_URLS_EXIST):
        super().__init__()
        self.listed_name, self.add_error = listed_name, add_error

    def member_remove(self, member, eps):
        self.calls.append(("remove", member, tuple(eps)))
        raise e.EtcdError("etcdctl member remove %s failed: Error: %s" % (member, e.MEMBER_NOT_FOUND))

    def member_add(self, name, peers, eps):
        self.calls.append(("add", name, tuple(peers)))
        raise e.EtcdError("etcdctl member add %s failed: Error: %s" % (name, self.add_error))

    def member_list(self, eps):
        return [dict(id="a1", name=self.listed_name, peer_urls=["http://172.30.213.11:2380"], client_urls=[],
                     learner=False),
                dict(id="b2", name="etcd-1", peer_urls=["http://172.30.213.10:2380"],
                     client_urls=["http://172.30.213.10:2379"], learner=False)]


def test_rejoin_counts_a_remove_and_an_add_a_killed_run_already_made_as_done():
    plan = e.plan_rejoin(_survey(), "etcd-2", ["http://172.30.213.11:2380"])
    ctl = _Raced()
    members = e.rejoin(ctl, plan, "etcd-2", ["http://172.30.213.11:2380"])
    assert [c[0] for c in ctl.calls] == ["remove", "add"]
    assert [m["id"] for m in members] == ["a1", "b2"]
    # the member listed unstarted beside the others: etcd refuses one more voting member before it compares peer URLs
    ctl = _Raced(add_error=e.NOT_ENOUGH_STARTED)
    assert [m["id"] for m in e.rejoin(ctl, plan, "etcd-2", ["http://172.30.213.11:2380"])] == ["a1", "b2"]
    # the peer URLs taken by a started member (not the one this run adds): the add's error, naming the member
    with pytest.raises(e.RejoinError) as err:
        e.rejoin(_Raced(listed_name="etcd-9"), plan, "etcd-2", ["http://172.30.213.11:2380"])
    assert err.value.removed == plan.remove_id and e.PEER_URLS_EXIST in str(err.value)
    assert str(err.value).startswith("member etcd-2: etcdctl member add etcd-2 failed")


def test_the_catch_up_wait_retries_failed_surveys_until_the_member_reaches_the_leader_revision():
    behind = _survey(name="etcd-3")
    behind["member"] = dict(behind["member"], revision=290)
    caught = dict(behind, member=dict(behind["member"], revision=301))
    answers = [e.EtcdError("no endpoint answered"), caught]
    clock = iter(range(100))

    def look():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    waited = e.wait_caught_up(look, behind, 30, sleep=lambda s: None, clock=lambda: next(clock))
    assert waited.done and waited.target == 301 and waited.info is caught
    stuck = e.wait_caught_up(lambda: behind, behind, 3, sleep=lambda s: None, clock=lambda: next(clock))
    assert not stuck.done and stuck.target == 301
