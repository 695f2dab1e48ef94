"""What image_archive (with only_if_placed) and image_archive_info ask of a node before anything changes: whether the
node holds the archive (its sidecar) and whether its kubelet and runtime name the pause image being preloaded."""

import json

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils.images import node

SHA = "ab" * 32


class Ended(Exception):
    def __init__(self, failed, result):
        super().__init__(result.get("msg"))
        self.failed, self.result = failed, result


class FakeModule(object):
    """The params and fail_json of an AnsibleModule (fail_json ends the run)."""

    def __init__(self, **params):
        self.params = dict(pause_image=None, pause_sources=[], fail_on_conflict=False, pause_variable="pause_image")
        self.params.update(params)

    def fail_json(self, **result):
        raise Ended(True, result)


def archive_with_sidecar(tmp_path, sidecar):
    path = tmp_path / "preload.tar.zst"
    path.write_bytes(b"archive")
    if sidecar is not None:
        (tmp_path / "preload.tar.zst.json").write_text(sidecar)
    return str(path)


@pytest.mark.parametrize("checksum", [SHA, "sha256:" + SHA, "SHA256:" + SHA.upper()])
def test_a_sidecar_naming_the_checksum_means_the_node_holds_the_archive(tmp_path, checksum):
    path = archive_with_sidecar(tmp_path, json.dumps(dict(sha256=SHA, images=[])))
    assert node.holds(path, checksum)


@pytest.mark.parametrize("sidecar", [None, "", "not json", "[]", json.dumps(dict(images=[])),
                                     json.dumps(dict(sha256="cd" * 32))])
def test_no_sidecar_a_bad_one_or_another_archive_means_the_node_does_not_hold_it(tmp_path, sidecar):
    path = archive_with_sidecar(tmp_path, sidecar)
    assert not node.holds(path, SHA)


def test_node_sidecar_is_empty_when_missing_or_not_valid_json(tmp_path):
    assert node.node_sidecar(archive_with_sidecar(tmp_path, "{")) == {}
    (tmp_path / "preload.tar.zst.json").unlink()
    assert node.node_sidecar(str(tmp_path / "preload.tar.zst")) == {}


def test_a_bad_checksum_raises():
    with pytest.raises(ValueError):
        node.holds("/nonexistent/preload.tar.zst", "abc")


def kubelet_files(tmp_path, image):
    flags = tmp_path / "kubeadm-flags.env"
    flags.write_text('KUBELET_KUBEADM_ARGS="--node-ip=10.0.0.4 --pod-infra-container-image=%s"\n' % image)
    fact = tmp_path / "kubescale_containerd_tuning.fact"
    fact.write_text(json.dumps(dict(sandbox_image="registry.k8s.io/pause:3.9")))
    return [str(flags), str(tmp_path / "missing.env"), str(fact)]


def test_no_pause_image_asks_nothing(tmp_path):
    module = FakeModule(pause_sources=kubelet_files(tmp_path, "registry.k8s.io/pause:3.8"), fail_on_conflict=True)
    assert node.pause_check(module) == []


def test_sources_naming_the_same_image_in_another_spelling_agree_and_a_missing_one_is_skipped(tmp_path):
    module = FakeModule(pause_image="registry.k8s.io/pause:3.9", fail_on_conflict=True,
                        pause_sources=kubelet_files(tmp_path, "registry.k8s.io/pause:3.9"))
    assert node.pause_check(module) == []


def test_a_conflict_is_returned_or_fails_naming_the_variable_and_the_file(tmp_path):
    sources = kubelet_files(tmp_path, "registry.k8s.io/pause:3.8")
    module = FakeModule(pause_image="registry.k8s.io/pause:3.9", pause_sources=sources)
    assert node.pause_check(module) == ["%s names registry.k8s.io/pause:3.8" % sources[0]]
    module.params.update(fail_on_conflict=True, pause_variable="image_preload_pause_image")
    with pytest.raises(Ended) as end:
        node.pause_check(module, archive="/opt/kubescale/images/preload.tar.zst")
    result = end.value.result
    assert result["msg"].startswith("image_preload_pause_image (registry.k8s.io/pause:3.9) is not the pause image "
                                    "this node uses: %s names registry.k8s.io/pause:3.8" % sources[0])
    assert result["pause_conflicts"] == ["%s names registry.k8s.io/pause:3.8" % sources[0]]
    assert result["archive"] == "/opt/kubescale/images/preload.tar.zst"


def test_an_unreadable_source_fails_naming_pause_sources(tmp_path):
    module = FakeModule(pause_image="registry.k8s.io/pause:3.9", pause_sources=[str(tmp_path)])
    with pytest.raises(Ended) as end:
        node.pause_check(module)
    assert end.value.result["msg"].startswith("pause_sources: cannot read %s" % tmp_path)


def test_a_bad_pause_image_fails_naming_the_option():
    with pytest.raises(Ended) as end:
        node.validate_pause(FakeModule(pause_image="Bad Ref"))
    assert end.value.result["msg"].startswith("pause_image: ")
    node.validate_pause(FakeModule(pause_image="pause:3.9"))
    node.validate_pause(FakeModule())
