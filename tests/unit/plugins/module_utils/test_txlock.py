import fcntl

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils.node import txlock


def test_the_lock_file_is_one_per_transaction_and_name_and_its_name_is_safe(tmp_path):
    assert txlock.lock_path("etcd-rejoin", "etcd-events-3", str(tmp_path)) == str(
        tmp_path / "kubescale-etcd-rejoin-etcd-events-3.lock")
    assert txlock.lock_path("etcd-rejoin", "../x y", str(tmp_path)).endswith("kubescale-etcd-rejoin-.._x_y.lock")


def test_a_second_holder_waits_for_the_first_and_gives_up_after_its_timeout(tmp_path):
    path = txlock.lock_path("etcd-rejoin", "m", str(tmp_path / "run"))
    first = txlock.hold(path, 1)
    slept, now = [], [0.0]

    def sleep(s):
        slept.append(s)
        now[0] += s

    with pytest.raises(txlock.LockTimeout) as err:
        txlock.hold(path, 3, sleep=sleep, clock=lambda: now[0])
    assert "held by another run's module for more than 3s" in str(err.value) and sum(slept) == 3
    first.close()  # the first run's module exits: the kernel drops its lock
    second = txlock.hold(path, 3, sleep=sleep, clock=lambda: now[0])
    with open(path) as other, pytest.raises(OSError):
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    second.close()
