"""The controller killed inside the workers' transactions (make lab-test's third stream): docker's and containerd's
store moves and an image load, on cpu-1, gpu-1 and cpu-2; and the state a docker move killed mid-copy leaves, made by
hand. A plain re-run converges with every image present and no store half-moved (tests/chaos/chaos.py). They touch no
control plane node, the Events cluster or an API object, so they run without the lock the control plane's modules
take, as the workers' other tests do."""

import pytest

from tests.chaos import chaos, transactions
from tests.chaos.chaos import node
from tests.chaos.rounds import rounds, run

pytestmark = pytest.mark.usefixtures("lab")


@pytest.mark.parametrize("name,seed", rounds(["docker_store_move", "containerd_store_move", "image_load"]))
def test_a_killed_controller_then_a_plain_rerun_converges(name, seed, capsys):
    run(name, seed, capsys)


def test_a_docker_move_killed_mid_copy_is_moved_again_and_starts_what_it_had_stopped():
    """The node's side killed between the move's stops and its switch (on the lab's small store a window of under a
    second, which a round's kill seldom hits): the move's notes written, the kubelet and docker stopped, daemon.json
    not yet switched. The plain re-run finds docker stopped and the kubelet not running, moves the store again, and
    starts the kubelet the dead move had stopped, as its note says; no note is left."""
    tx = transactions.docker_store_move()
    config = "/etc/docker/daemon.json"
    node(tx.host, "sh", "-euc", """
        cp -p {config} {config}.kubescale-before-move
        echo '["kubelet.service"]' > {config}.kubescale-move-stopped
        systemctl stop kubelet.service docker.service docker.socket
    """.format(config=config))
    chaos.playbook(*tx.argv)
    tx.verify()  # on the new root, every image, no note left, and the kubelet running again
    chaos.playbook(*tx.restore)
    tx.after_restore()
