"""ansible-core finds a collection's filter by importing every filter file of the collection in turn, in each forked
worker that uses one: a filter file that imports its module_utils (python-cryptography for x509_due) at load made every
task that uses any kubescale.tuning filter pay for all of them. The files import their code at the first call."""

import json
import os
import subprocess
import sys

from conftest import LINK_ROOT

PROBE = r"""
import json, sys
from ansible.plugins.loader import filter_loader, init_plugin_loader
init_plugin_loader([sys.argv[1]])
filter_loader.get("ansible.builtin.to_json")
names = sys.argv[2:]
before = set(sys.modules)
found = dict((name, filter_loader.get(name) is not None) for name in names)
loaded = sorted(m for m in set(sys.modules) - before if m.startswith("ansible_collections.kubescale.tuning.plugins.")
                or m.split(".")[0] == "cryptography")
called = filter_loader.get("kubescale.tuning.image_ref").j2_function("pause:3.9")
print(json.dumps(dict(found=found, loaded=loaded, called=called,
                      after=sorted(m for m in sys.modules if ".module_utils.images." in m))))
"""


def test_finding_a_filter_loads_the_filter_files_but_none_of_their_code_until_it_is_called():
    names = ["kubescale.tuning.%s" % n for n in ("url_errors", "x509_due", "from_toml", "etcd_bytes", "apf_errors",
                                                 "etcd_overrides_servers")]
    out = subprocess.run([sys.executable, "-c", PROBE, LINK_ROOT] + names, capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=LINK_ROOT))
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["found"] == dict((n, True) for n in names)
    filters = "ansible_collections.kubescale.tuning.plugins.filter"
    # the filter files' one shared import: plugin_utils/_lazy.py (the standard library's importlib, nothing else)
    lazy = ("ansible_collections.kubescale.tuning.plugins.plugin_utils",
            "ansible_collections.kubescale.tuning.plugins.plugin_utils._lazy")
    assert [m for m in got["loaded"] if not m.startswith(filters) and m not in lazy] == [], "imported with the filter files"
    assert sorted(m for m in got["loaded"] if m.startswith(filters + ".")) == [
        filters + "." + f for f in ("apf_objects", "etcd", "image_ref", "rollout", "toml", "x509")]
    # a filter called imports its code then
    assert got["called"] == "docker.io/library/pause:3.9"
    assert got["after"] == ["ansible_collections.kubescale.tuning.plugins.module_utils.images.ref"]
