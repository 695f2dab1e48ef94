"""The controller killed inside the workers' transactions (make lab-test's third stream): docker's and containerd's
store moves and an image load, on cpu-1, gpu-1 and cpu-2; and, made by hand, the state a docker move killed mid-copy
leaves and a re-run beside a move whose module outlived its controller. A plain re-run converges with every image
present and no store half-moved (tests/chaos/chaos.py). They touch no control plane node, the Events cluster or an API
object, so they run without the lock the control plane's modules take, as the workers' other tests do."""

import subprocess

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils.node.txlock import lock_path
from tests.chaos import chaos, transactions
from tests.chaos.chaos import node
from tests.chaos.rounds import rounds, run
from tests.integration import json_report

pytestmark = pytest.mark.usefixtures("lab")


@pytest.mark.parametrize("name,seed", rounds(["docker_store_move", "containerd_store_move", "image_load"]))
def test_a_killed_controller_then_a_plain_rerun_converges(name, seed, capsys):
    run(name, seed, capsys)


def stopped_for_a_move(host):
    """What a docker move leaves on `host` between its stops and its switch: its notes written (daemon.json saved
    beside itself, the kubelet noted as stopped), the kubelet and docker stopped, daemon.json not yet switched."""
    node(host, "sh", "-euc", """
        cp -p {config} {config}.kubescale-before-move
        echo '["kubelet.service"]' > {config}.kubescale-move-stopped
        systemctl stop kubelet.service docker.service docker.socket
    """.format(config=transactions.DOCKER_CONFIG))


def test_a_docker_move_killed_mid_copy_is_moved_again_and_starts_what_it_had_stopped():
    """The node's side killed between the move's stops and its switch (on the lab's small store a window of under a
    second, which a round's kill seldom hits): the move's notes written, the kubelet and docker stopped, daemon.json
    not yet switched. The plain re-run finds docker stopped and the kubelet not running, moves the store again, and
    starts the kubelet the dead move had stopped, as its note says; no note is left."""
    tx = transactions.docker_store_move()
    stopped_for_a_move(tx.host)
    chaos.playbook(*tx.argv)
    tx.verify()  # on the new root, every image, no note left, and the kubelet running again
    chaos.playbook(*tx.restore)
    tx.after_restore()


# Run on the node by the test below: what a move's module whose controller died goes on doing - it holds the store's
# lock, waits until another process (the re-run's module) waits on that lock, then ends the move as the module would:
# the copy, daemon.json switched, docker and the kubelet started, the notes removed. Prints each stage.
DEAD_RUNS_MODULE = r"""
import fcntl, json, os, subprocess, sys, time
lock, config, home, moved = sys.argv[1:5]
held = open(lock, "a")
fcntl.flock(held, fcntl.LOCK_EX)
print("held", os.getpid(), flush=True)


def waiting():
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            if any(os.readlink("/proc/%s/fd/%s" % (pid, fd)) == lock for fd in os.listdir("/proc/%s/fd" % pid)):
                return True
        except OSError:
            pass
    return False


while not waiting():
    time.sleep(0.2)
print("waited on", flush=True)
subprocess.run(["rsync", "-aHAX", "--delete", home + "/", moved + "/"], check=True)
data = json.load(open(config))
data["data-root"] = moved
with open(config + ".tmp", "w") as f:
    f.write(json.dumps(data, indent=2) + "\n")
os.replace(config + ".tmp", config)
subprocess.run(["systemctl", "start", "docker.service", "kubelet.service"], check=True)
os.remove(config + ".kubescale-move-stopped")
os.remove(config + ".kubescale-before-move")
print("done", flush=True)
"""


def test_a_rerun_waits_for_the_move_its_dead_controller_left_running_and_does_not_move_again():
    """Only the controller killed, in the middle of a docker move: its module goes on with the move on the node (on a
    large store, minutes of copying) while the plain re-run starts. Made by hand: a process on cpu-1 holds the store's
    lock, as that module does, with the move's notes written and the kubelet and docker stopped, and ends the move once
    the re-run's module waits on the lock. The re-run reads and plans only after that: it finds the store moved and
    moves nothing, where without the lock it would have started a second move beside the first."""
    tx = transactions.docker_store_move()
    config, moved = transactions.DOCKER_CONFIG, transactions.DOCKER_MOVED
    stopped_for_a_move(tx.host)
    holder = subprocess.Popen(
        ["docker", "exec", "kslab-" + tx.host, "python3", "-c", DEAD_RUNS_MODULE,
         lock_path("store-move", config), config, transactions.DOCKER_HOME, moved],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    said, pid = holder.stdout.readline().split(), None
    try:
        assert said[:1] == ["held"], said
        pid = said[1]
        rerun = chaos.playbook(*tx.argv, env={"ANSIBLE_STDOUT_CALLBACK": "json"})
        try:
            said = holder.communicate(timeout=30)[0].split()
        except subprocess.TimeoutExpired:
            pytest.fail("the re-run ended without waiting on the store's lock: it planned (and moved) while the dead "
                        "run's module held it", pytrace=False)
        assert said == ["waited", "on", "done"], said
        merges = [(host, res.get("moved")) for task, host, res in json_report.results(rerun.stdout)
                  if tx.steps[0] in task]
        assert merges == [(tx.host, False)], merges
        tx.verify()  # on the new root, every image, no note left, and the kubelet running
    except BaseException:  # whatever failed, cpu-1 is put back for the tests after this one
        if said[-1:] != ["done"]:  # the test gave up on the holder: it does nothing more
            holder.kill()
            if pid:
                node(tx.host, "kill", "-KILL", pid, check=False)
        chaos.playbook(*tx.restore, check=False)
        node(tx.host, "rm", "-rf", moved, check=False)
        raise
    chaos.playbook(*tx.restore)
    tx.after_restore()
