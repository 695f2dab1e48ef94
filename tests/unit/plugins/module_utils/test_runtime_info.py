"""runtime_info: the store's place, containerd's version and config layout."""

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils.node import runtime_info as ri


def test_the_ssd_mount_comes_from_the_play_else_from_the_recorded_fact():
    assert ri.ssd_mount("/mnt/ssd", '{"mount": "/other"}') == "/mnt/ssd"
    assert ri.ssd_mount("", '{"mount": "/mnt/local-ssd", "fstype": "ext4"}') == "/mnt/local-ssd"
    assert ri.ssd_mount("", None) == "" and ri.ssd_mount("", "not json") == "" and ri.ssd_mount("", "[]") == ""


def test_the_store_root():
    assert ri.store_root("/var/lib/x", "docker", "", "v", "/f") == "/var/lib/x"
    assert ri.store_root("", "docker", "/mnt/local-ssd/", "v", "/f") == "/mnt/local-ssd/docker"
    with pytest.raises(ri.InfoError, match=r"^docker_overlay2_data_root is empty, .*records /f\) or set "
                                           r"docker_overlay2_data_root$"):
        ri.store_root("", "docker", "", "docker_overlay2_data_root", "/f")


@pytest.mark.parametrize("given,output,want", [
    ("v1.7.13", "", "1.7.13"),
    ("", "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+b1", "1.6.20"),
    ("", "containerd containerd.io v2.0.4 1a43cb6a1035441f9aca8f5666a9b3ef9e70ab20", "2.0.4"),
])
def test_containerd_version(given, output, want):
    assert ri.version_of(given, output, "containerd_tuning_version", "containerd") == want


def test_no_version_names_the_variable():
    with pytest.raises(ri.InfoError, match="^containerd_tuning_version is empty and `containerd --version` gave no"):
        ri.version_of("", "", "containerd_tuning_version", "containerd")


def test_the_layout_is_the_files_own_else_by_version():
    assert ri.containerd_layout('version = 2\nroot = "/x"\n', "2.0.1", "/c.toml") == (2, 2)
    assert ri.containerd_layout('version = 3\n', "1.7.0", "/c.toml") == (3, 3)
    assert ri.containerd_layout(None, "2.1.0", "/c.toml") == (None, 3)
    assert ri.containerd_layout("# empty\n", "1.6.20", "/c.toml") == (None, 2)
    # a TOML parser, not a regex: a commented-out or nested version is not the file's
    assert ri.containerd_layout('# version = 3\n[plugins.x]\nversion = 3\n', "1.6.20", "/c.toml") == (None, 2)
    with pytest.raises(ri.InfoError, match=r"^/c.toml has config version 1, only 2 and 3 are known"):
        ri.containerd_layout("version = 1\n", "1.6.20", "/c.toml")


def test_pull_progress_timeout_from_1_7():
    assert not ri.has_pull_progress_timeout("1.6.20")
    assert ri.has_pull_progress_timeout("1.7.0") and ri.has_pull_progress_timeout("2.0.4")
