"""The controller killed inside the workers' transactions (make lab-test's third stream): docker's and containerd's
store moves and an image load, on cpu-1, gpu-1 and cpu-2. A plain re-run converges with every image present and no
store half-moved (tests/chaos/chaos.py). They touch no control plane node, the Events cluster or an API object, so
they run without the lock the control plane's modules take, as the workers' other tests do."""

import pytest

from tests.chaos.rounds import rounds, run

pytestmark = pytest.mark.usefixtures("lab")


@pytest.mark.parametrize("name,seed", rounds(["docker_store_move", "containerd_store_move", "image_load"]))
def test_a_killed_controller_then_a_plain_rerun_converges(name, seed, capsys):
    run(name, seed, capsys)
