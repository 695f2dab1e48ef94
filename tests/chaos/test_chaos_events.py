"""The controller killed inside the Events cluster's transactions (at the end of make lab-test's etcd stream): a wiped
Events member's rejoin and the cluster's rolling restart. A plain re-run converges with every key on every member
(tests/chaos/chaos.py). They stop one Events member at a time, so the cluster keeps its quorum and kube-apiserver its
readiness: under the Events cluster's lock only, off the modules that stop the whole cluster or need every member up,
beside those that hold only the control plane's lock."""

import pytest

from tests.chaos.rounds import rounds, run

pytestmark = [pytest.mark.usefixtures("lab"), pytest.mark.usefixtures("events_cluster_lock")]


@pytest.mark.parametrize("name,seed", rounds(["events_rejoin", "events_rolling_restart"]))
def test_a_killed_controller_then_a_plain_rerun_converges(name, seed, capsys):
    run(name, seed, capsys)
