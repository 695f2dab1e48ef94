"""config_merge logic: TOML reader/writer, deep merge, changed paths, env flags."""

import json
import os

import pytest
import tomllib

from ansible_collections.kubescale.tuning.plugins.module_utils.node import confmerge as cm
from ansible_collections.kubescale.tuning.plugins.module_utils.node import toml as _toml

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")
CONTAINERD_DEFAULT = os.path.join(FIXTURES, "containerd-1.6-default.toml")

TRICKY = r'''
# comment
title = "a \"quoted\" \\ value\twith\u00e9"
lit = 'C:\no\escape'
ml = """
first \
  second"""
ml_lit = LITQ
raw \n line'LITQ
ints = [1_000, 0x1F, 0o17, 0b101, -3, +4]
floats = [1.5, -2e3, 6.02E+23, inf, -inf]
bools = [true, false]
nested = [[1, 2], ["a", 'b'], ]
inline = { a = 1, "b.c" = "x", d.e = true }
multi = [
  "one",  # trailing comment
  "two",
]
dotted.key = 7
"quoted key" = 1
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true
[[servers]]
name = "a"
[servers.extra]
x = 1
[[servers]]
name = "b"
'''.replace("LITQ", "'" * 3)


def vendored_loads(text):
    """The vendored tomli, which nodes older than Python 3.11 use (here on 3.11, beside tomllib)."""
    from ansible_collections.kubescale.tuning.plugins.module_utils._vendor.tomli import _parser
    return _parser.loads(text)


def test_the_vendored_tomli_agrees_with_tomllib_on_tricky_text():
    assert vendored_loads(TRICKY) == tomllib.loads(TRICKY)


def test_the_vendored_tomli_agrees_on_containerd_default_config():
    text = open(CONTAINERD_DEFAULT).read()
    assert vendored_loads(text) == tomllib.loads(text)


def test_datetimes_are_datetimes_and_written_back_as_such():
    data = _toml.loads("a = 1979-05-27T07:32:00Z\nb = 1979-05-27\n")
    assert data["a"].year == 1979 and data["a"].tzinfo is not None and str(data["b"]) == "1979-05-27"
    assert _toml.loads(_toml.dumps(data)) == data


@pytest.mark.parametrize("text", [TRICKY, open(CONTAINERD_DEFAULT).read()])
def test_writer_round_trips(text):
    data = tomllib.loads(text)
    out = _toml.dumps(data)
    assert tomllib.loads(out) == data
    assert vendored_loads(out) == data


def test_writer_lays_out_tables_like_containerd():
    out = _toml.dumps({"version": 2, "plugins": {"io.containerd.grpc.v1.cri": {"max_concurrent_downloads": 10}}})
    assert out == 'version = 2\n\n  [plugins."io.containerd.grpc.v1.cri"]\n    max_concurrent_downloads = 10\n'


@pytest.mark.parametrize("bad", ["a = ", "a = 1\na = 2", "[t]\n[t]", 'a = "open', "a = [1 2]", "= 1", "a = 1 b"])
def test_bad_toml_is_refused(bad):
    with pytest.raises(_toml.TomlError):
        _toml.loads(bad)


def test_json_merge_keeps_user_keys_and_reports_paths():
    text = json.dumps({"registry-mirrors": ["https://m"], "log-opts": {"max-file": "5", "labels": "x"}})
    settings = {"max-concurrent-downloads": 10, "log-opts": {"max-size": "100m", "max-file": "3"}}
    before, after, new, paths = cm.merge("json", text, settings)
    assert after["registry-mirrors"] == ["https://m"]
    assert after["log-opts"] == {"max-file": "3", "labels": "x", "max-size": "100m"}
    assert sorted(paths) == [("log-opts", "max-file"), ("log-opts", "max-size"), ("max-concurrent-downloads",)]
    assert json.loads(new) == after


def test_merge_unchanged_data_writes_nothing_even_if_formatting_differs():
    text = '{"max-concurrent-downloads":10,   "debug": false}'
    unused1, unused2, new, paths = cm.merge("json", text, {"max-concurrent-downloads": 10})
    assert new is None and paths == []


def test_type_change_counts_as_a_change():
    unused, after, new, paths = cm.merge("json", '{"a": "10"}', {"a": 10})
    assert paths == [("a",)] and after == {"a": 10}
    unused1, unused2, unused, paths = cm.merge("json", '{"a": 1}', {"a": True})
    assert paths == [("a",)]


def test_none_removes_a_key_and_missing_file_is_created():
    unused, after, unused3, paths = cm.merge("json", '{"a": 1, "b": 2}', {"a": None})
    assert after == {"b": 2} and paths == [("a",)]
    unused, after, new, paths = cm.merge("json", None, {"a": 1})
    assert new == '{\n  "a": 1\n}\n'
    unused1, unused2, new, unused4 = cm.merge("json", None, {"a": None})
    assert new is None


@pytest.mark.parametrize("fmt,text", [("json", "{bad"), ("json", "[1, 2]"), ("toml", "a = "),
                                      ("yaml", "a: [1"), ("yaml", "- 1\n- 2\n"), ("env", "not a line")])
def test_bad_files_fail_with_the_path(fmt, text):
    with pytest.raises(cm.ConfError, match="/etc/x"):
        cm.merge(fmt, text, {"a": 1}, "/etc/x")


def test_toml_merge_into_containerd_default():
    text = open(CONTAINERD_DEFAULT).read()
    settings = {"root": "/mnt/local-ssd/containerd", "plugins": {"io.containerd.grpc.v1.cri": {
        "max_concurrent_downloads": 10,
        "containerd": {"runtimes": {"runc": {"options": {"SystemdCgroup": True}}}}}}}
    before, after, new, paths = cm.merge("toml", text, settings)
    data = tomllib.loads(new)
    cri = data["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["max_concurrent_downloads"] == 10
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    assert cri["containerd"]["runtimes"]["runc"]["options"]["BinaryName"] == ""
    assert data["root"] == "/mnt/local-ssd/containerd"
    assert ("plugins", "io.containerd.grpc.v1.cri", "max_concurrent_downloads") in paths
    # Everything else is as it was.
    assert cm.deep_merge(before, settings) == data
    unused1, unused2, again, unused4 = cm.merge("toml", new, settings)
    assert again is None


def test_yaml_merge_keeps_kubelet_keys():
    text = ("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
            "cgroupDriver: systemd\nevictionHard:\n  memory.available: 100Mi\n")
    unused, after, new, paths = cm.merge("yaml", text, {"serializeImagePulls": False, "maxParallelImagePulls": 5})
    assert after["evictionHard"] == {"memory.available": "100Mi"}
    assert new.startswith("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n")
    assert "serializeImagePulls: false\n" in new
    assert paths == [("serializeImagePulls",), ("maxParallelImagePulls",)]


def test_env_flags_merge_keeps_other_flags():
    text = 'KUBELET_EXTRA_ARGS="--node-labels=a=b,c=d --v 2"\nOTHER=x\n'
    before, after, new, paths = cm.merge("env", text, {"KUBELET_EXTRA_ARGS": {
        "--image-pull-progress-deadline": "30m", "--serialize-image-pulls": False}})
    assert after["KUBELET_EXTRA_ARGS"] == ("--node-labels=a=b,c=d --v=2 --image-pull-progress-deadline=30m "
                                           "--serialize-image-pulls=false")
    assert after["OTHER"] == "x"
    assert cm.parse_env(new) == after
    unused1, unused2, again, unused4 = cm.merge("env", new, {"KUBELET_EXTRA_ARGS": {"--image-pull-progress-deadline": "30m"}})
    assert again is None


def test_env_flag_with_spaces_round_trips():
    unused, after, new, unused4 = cm.merge("env", None, {"X": {"--a": "b c"}})
    assert cm.flags_from_text(cm.parse_env(new)["X"]) == {"--a": "b c"}


def test_env_rejects_non_flags():
    with pytest.raises(cm.ConfError, match="KUBELET_EXTRA_ARGS"):
        cm.merge("env", 'KUBELET_EXTRA_ARGS="positional"\n', {"KUBELET_EXTRA_ARGS": {"--a": 1}})
    with pytest.raises(cm.ConfError, match="must start with --"):
        cm.merge("env", None, {"K": {"a": 1}})
