"""The controller killed inside the main etcd's transactions (make lab-test's etcd stream): a member's move onto the
SSD, and a wiped member's rejoin. A plain re-run converges with every key on every member (tests/chaos/chaos.py)."""

import pytest

from tests.chaos.rounds import rounds, run

pytestmark = pytest.mark.usefixtures("lab")


@pytest.mark.parametrize("name,seed", rounds(["etcd_move", "etcd_rejoin"]))
def test_a_killed_controller_then_a_plain_rerun_converges(name, seed, capsys):
    run(name, seed, capsys)
