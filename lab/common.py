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
    """Run argv; with capture=False its output is shown on stderr, never on stdout: lab.py's subcommands print what
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


def issue_cert(name, subject, ext_lines, ca_crt, ca_key, out_dir):
    """A key and certificate signed by the CA `ca_crt`/`ca_key` (openssl on the host), made once."""
    key, crt = os.path.join(out_dir, name + ".key"), os.path.join(out_dir, name + ".crt")
    if os.path.exists(crt):
        return key, crt
    os.makedirs(out_dir, exist_ok=True)
    csr, ext = os.path.join(out_dir, name + ".csr"), os.path.join(out_dir, name + ".ext")
    with open(ext, "w") as f:
        f.write("\n".join(ext_lines) + "\n")
    run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", key, "-out", csr])
    run(["openssl", "x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial", "-days", "3650",
         "-extfile", ext, "-out", crt])
    return key, crt


# The stand-in's unit (lab/fixtures/kubelet.service).
with open(os.path.join(REPO, "lab", "fixtures", "kubelet.service")) as _f:
    KUBELET_UNIT = _f.read()


def install_standin(cname):
    """The lab's stand-in for the kubelet (lab/fixtures/kubelet-standin.py) as kubelet.service on node `cname`."""
    with open(os.path.join(REPO, "lab", "fixtures", "kubelet-standin.py")) as f:
        put_file(cname, "/usr/local/lib/kubescale-lab/kubelet-standin.py", f.read(), "0644")
    put_file(cname, "/etc/systemd/system/kubelet.service", KUBELET_UNIT, "0644")
