"""The controller killed inside the Events cluster's and the workers' transactions (make lab-test's third stream): a
wiped Events member's rejoin, the Events cluster's rolling restart, docker's and containerd's store moves, an image
load. A plain re-run converges with every key on every member, every image present and no store half-moved
(tests/chaos/chaos.py)."""

import pytest

from tests.chaos.rounds import rounds, run

pytestmark = [pytest.mark.usefixtures("lab"), pytest.mark.usefixtures("control_plane_lock")]


@pytest.mark.parametrize("name,seed", rounds(["events_rejoin", "events_rolling_restart", "docker_store_move",
                                              "containerd_store_move", "image_load"]))
def test_a_killed_controller_then_a_plain_rerun_converges(name, seed, capsys):
    run(name, seed, capsys)
