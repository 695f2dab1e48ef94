"""The lab's API server from the tests: kubectl with the lab's admin kubeconfig, and waiting for a condition."""

import time

from lab import controlplane


def kubectl(*args, stdin=None, check=True, timeout="30s"):
    """kubectl against the lab's kube-apiserver; with check, a non-zero exit fails the test with kubectl's stderr."""
    proc = controlplane.kubectl(controlplane.build_binaries(), "--request-timeout=" + timeout, *args,
                                input_data=stdin, check=False)
    if check and proc.returncode != 0:
        raise AssertionError("kubectl %s: %s" % (" ".join(args), proc.stderr.strip()[-2000:]))
    return proc


def wait_for(what, test, timeout=120, interval=1):
    """test()'s first true value, asked every `interval` seconds; fails after `timeout` naming `what`."""
    deadline = time.time() + timeout
    while True:
        value = test()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError("timed out after %ds waiting for %s" % (timeout, what))
        time.sleep(interval)
