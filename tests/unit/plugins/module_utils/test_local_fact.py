"""local_fact writes what `to_nice_json` wrote, so fact files from earlier releases stay unchanged."""

from ansible.plugins.filter.core import to_nice_json

from ansible_collections.kubescale.tuning.plugins.modules import local_fact


def test_render_matches_to_nice_json():
    data = {"mount": "/mnt/local-ssd", "dirs": ["docker", "etcd"], "gc_thresh3": 100000, "persist_only": False,
            "nested": {"b": None, "a": "é"}}
    assert local_fact.render(data) == to_nice_json(data) + "\n"
