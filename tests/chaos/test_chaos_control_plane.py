"""The controller killed inside kube-scheduler's and kube-apiserver's manifest edits (make lab-test's control plane
stream): a plain re-run converges, the component runs its new settings and the API server answers through the
controlPlaneEndpoint; the site's settings are put back after (tests/chaos/chaos.py)."""

import pytest

from tests.chaos.rounds import rounds, run

pytestmark = [pytest.mark.usefixtures("lab"), pytest.mark.usefixtures("control_plane_lock")]


@pytest.mark.parametrize("name,seed", rounds(["scheduler_edit", "apiserver_edit"]))
def test_a_killed_controller_then_a_plain_rerun_converges(name, seed, capsys):
    run(name, seed, capsys)
