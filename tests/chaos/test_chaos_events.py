"""The controller killed inside the Events cluster's transactions (make lab-test's third stream): a wiped Events
member's rejoin and the cluster's rolling restart. A plain re-run converges with every key on every member
(tests/chaos/chaos.py). They stop Events members, which kube-apiserver writes to: under the lock the control plane's
modules take."""

import pytest

from tests.chaos.rounds import rounds, run

pytestmark = [pytest.mark.usefixtures("lab"), pytest.mark.usefixtures("control_plane_lock")]


@pytest.mark.parametrize("name,seed", rounds(["events_rejoin", "events_rolling_restart"]))
def test_a_killed_controller_then_a_plain_rerun_converges(name, seed, capsys):
    run(name, seed, capsys)
