"""The lab's own modules (lab/), for tests that render the lab's fixtures or talk to its control plane."""

import fcntl
import os
import time

import pytest

HOSTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "inventories",
                     "lab", "hosts.yml")
LOCK = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "lab", ".state",
                    "control-plane.lock")


@pytest.fixture(scope="module")
def control_plane_lock(request):
    """Held for a whole test module that stops the Events cluster, rewrites kube-apiserver's manifest or leans on the
    kubeadm etcd behind it: make lab-test runs its streams side by side, and such modules must not overlap. How long
    the module waited for it and held it is printed, as the holders' sum bounds the streams' time."""
    os.makedirs(os.path.dirname(LOCK), exist_ok=True)
    asked = time.monotonic()
    with open(LOCK, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        got = time.monotonic()
        yield
        fcntl.flock(f, fcntl.LOCK_UN)
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():  # on the terminal, not in the test's captured output
            reporter.write_line("control_plane_lock: %s waited %.0f s, held %.0f s"
                                % (request.module.__name__, got - asked, time.monotonic() - got))


@pytest.fixture(scope="session")
def lab():
    """The lab's inventory: a test that needs the lab fails without it (make lab), never skips."""
    if not os.path.exists(HOSTS):
        pytest.fail("needs the lab: %s is missing (make lab)" % HOSTS, pytrace=False)
    return HOSTS
