"""Offline stand-in for ansible-test's get-pip-<version>.py bootstrap.

ansible-test downloads get-pip from a host that is not reachable here, but uses
~/.ansible/test/cache/get_pip_<version>.py when present. This stand-in gives it the same effect:
pip from the interpreter's bundled ensurepip, then `pip install` of the requested packages from PyPI.
"""

import subprocess
import sys

DROP = {"--no-setuptools", "--no-wheel"}

subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"])
subprocess.check_call([sys.executable, "-m", "pip", "install"] + [a for a in sys.argv[1:] if a not in DROP])
