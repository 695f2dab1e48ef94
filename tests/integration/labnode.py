"""One command on a lab node (its container), for the integration tests."""

import subprocess


def node(name, *argv, check=True, stdin=None):
    """Run argv in lab node `name`; with check, a non-zero exit fails the test with the command's stderr."""
    interactive = ["-i"] if stdin is not None else []
    proc = subprocess.run(["docker", "exec"] + interactive + ["kslab-" + name] + list(argv), capture_output=True,
                          text=True, check=False, input=stdin)
    if check and proc.returncode != 0:
        raise AssertionError("%s: %s failed: %s" % (name, " ".join(argv), proc.stderr))
    return proc
