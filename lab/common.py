"""What the lab's parts share: running commands, talking to docker and the nodes, the lab's state directory."""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATE = os.path.join(REPO, "lab", ".state")
PKI = os.path.join(STATE, "pki")
PREFIX = "kslab-"
# The docker label every lab container, network and image carries.
LABEL = "io.kubescale.lab"


class LabError(Exception):
    pass


def log(msg):
    print("lab: " + msg, file=sys.stderr, flush=True)


def run(argv, check=True, capture=True, input_data=None):
    """Run argv; with capture=False its output is shown on stderr, never on stdout: the lab's subcommands print what
    scripts take from stdout (an image's tag), and a first build's debootstrap lines must not mix into it."""
    proc = subprocess.run(argv, input=input_data, stdout=subprocess.PIPE if capture else sys.stderr,
                          stderr=subprocess.PIPE if capture else None, text=True, check=False)
    if check and proc.returncode != 0:
        raise LabError("command failed (%d): %s\n%s"
                       % (proc.returncode, " ".join(argv), (proc.stderr or "").strip()))
    return proc


def docker(*args, check=True):
    return run(["docker"] + list(args), check=check)


def put_file(cname, path, text, mode="0600"):
    """Write `text` to `path` on node `cname` (its directory made), with `mode`."""
    run(["docker", "exec", "-i", cname, "sh", "-c", 'mkdir -p "$(dirname "$1")" && cat > "$1.tmp" && chmod %s "$1.tmp" '
         '&& mv "$1.tmp" "$1"' % mode, "put", path], input_data=text)
