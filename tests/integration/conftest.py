"""The lab's own modules (lab/), for tests that render the lab's fixtures or talk to its control plane."""

import contextlib
import fcntl
import os
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")
# make lab-test's streams run side by side; two locks keep apart the tests that must not overlap:
# - the control plane's: kube-apiserver's manifest and restarts, kubeadm's record, the scheduler and the cluster's
#   objects a test needs steady;
# - the Events cluster's: a test that stops, wipes or restarts Events members, or needs all of them up.
CONTROL_PLANE_LOCK = os.path.join(REPO, "lab", ".state", "control-plane.lock")
EVENTS_LOCK = os.path.join(REPO, "lab", ".state", "events-cluster.lock")


@contextlib.contextmanager
def holding(config, who, *paths):
    """Hold the locks at `paths`, taken in the order given, for the block. A test that needs both takes the Events
    cluster's first: waiting for it then keeps nobody off the control plane. How long `who` waited and held them goes
    to the terminal (not to the test's captured output): the holders' sum bounds the streams' time."""
    os.makedirs(os.path.dirname(paths[0]), exist_ok=True)
    asked = time.monotonic()
    got = None
    try:
        with contextlib.ExitStack() as stack:
            for path in paths:
                fcntl.flock(stack.enter_context(open(path, "w")), fcntl.LOCK_EX)  # released as the file closes
            got = time.monotonic()
            yield
    finally:
        if got is not None:
            report(config, "%s: %s waited %.0f s, held %.0f s" % (
                " and ".join(os.path.basename(p) for p in paths), who, got - asked, time.monotonic() - got))


def report(config, line):
    """A line on the terminal, not in the test's captured output."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(line)


@pytest.fixture(scope="module")
def control_plane_lock(request):
    """For a whole module that rewrites kube-apiserver's manifest or kubeadm's record, restarts a control plane
    component, or needs them steady."""
    with holding(request.config, request.module.__name__, CONTROL_PLANE_LOCK):
        yield


@pytest.fixture(scope="module")
def events_cluster_lock(request):
    """For a whole module that stops, wipes or restarts Events members one at a time (the cluster keeps its quorum,
    so kube-apiserver stays ready): it may overlap the control plane's modules, not one that needs every member."""
    with holding(request.config, request.module.__name__, EVENTS_LOCK):
        yield


@pytest.fixture(scope="module")
def control_plane_and_events_lock(request):
    """Both, for a whole module that stops the Events cluster (kube-apiserver's readiness then fails) or needs every
    member up while it works on the control plane."""
    with holding(request.config, request.module.__name__, EVENTS_LOCK, CONTROL_PLANE_LOCK):
        yield


@pytest.fixture(scope="session")
def lab():
    """The lab's inventory: a test that needs the lab fails without it (make lab), never skips."""
    if not os.path.exists(HOSTS):
        pytest.fail("needs the lab: %s is missing (make lab)" % HOSTS, pytrace=False)
    return HOSTS
