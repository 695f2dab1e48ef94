"""image_archive's private logic: references, the head index, digests, save's atomicity, runtime parsing.

Archives are built here from real tar members (a docker-archive and an OCI layout) and compressed with the
real zstd and gzip; the runtimes are replaced by a recorded command runner (the molecule scenario `preload`
runs real dockerd and containerd).
"""

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile

import pytest

from ansible_collections.kubescale.tuning.plugins.module_utils.images.archive import (
    ensure_loaded,
    save,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.images.compression import (
    detect_compression,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.images.files import (
    ArchiveError,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.images.index import (
    INDEX_MEMBER,
    read_index,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.images.pause import (
    conflict_message,
    pause_conflicts,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.images.ref import (
    normalize_ref,
    parse_sha256,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.images.sidecar import (
    sidecar_path,
    sidecar_text,
    sidecar_url,
)
from ansible_collections.kubescale.tuning.plugins.module_utils.images.store import (
    PIN_LABEL,
    Runner,
    Store,
    parse_size,
    present,
)

LAYER = os.urandom(1 << 20)  # incompressible: reading it would show in bytes_read
CONFIG = json.dumps({"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers"}}).encode()
CONFIG_HEX = hashlib.sha256(CONFIG).hexdigest()
LAYER_HEX = hashlib.sha256(LAYER).hexdigest()
MANIFEST_HEX = "ab" * 32


def _add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def docker_archive(path, tags=("kstest/app:1",)):
    """The shape `docker save` writes: layer dirs, config, then manifest.json and repositories last."""
    with tarfile.open(path, "w") as tar:
        _add(tar, LAYER_HEX + "/layer.tar", LAYER)
        _add(tar, CONFIG_HEX + ".json", CONFIG)
        manifest = [{"Config": CONFIG_HEX + ".json", "RepoTags": list(tags), "Layers": [LAYER_HEX + "/layer.tar"]}]
        _add(tar, "manifest.json", json.dumps(manifest).encode())
    return path


def oci_archive(path, name="docker.io/kstest/app:1"):
    """The shape `ctr images export` writes: blobs, index.json with the image name, manifest.json."""
    with tarfile.open(path, "w") as tar:
        _add(tar, "blobs/sha256/" + LAYER_HEX, LAYER)
        _add(tar, "blobs/sha256/" + CONFIG_HEX, CONFIG)
        index = {"schemaVersion": 2, "manifests": [{"digest": "sha256:" + MANIFEST_HEX,
                                                    "annotations": {"io.containerd.image.name": name}}]}
        _add(tar, "index.json", json.dumps(index).encode())
        manifest = [{"Config": "blobs/sha256/" + CONFIG_HEX, "RepoTags": ["kstest/app:1"],
                     "Layers": ["blobs/sha256/" + LAYER_HEX]}]
        _add(tar, "manifest.json", json.dumps(manifest).encode())
    return path


class FakeRunner(Runner):
    """Records argv lists; answers from a table; `docker save`/`ctr export` copy a prepared tar."""

    def __init__(self, answers=None, export_from=None, export_rc=0):
        super(FakeRunner, self).__init__()
        self.calls = []
        self.answers = answers or {}
        self.export_from = export_from
        self.export_rc = export_rc

    def run(self, argv):
        self.calls.append(list(argv))
        if argv[:2] == ["docker", "save"] or argv[3:5] == ["images", "export"]:
            dest = argv[3] if argv[0] == "docker" else argv[5]
            if self.export_rc:
                with open(dest, "wb") as f:
                    f.write(b"partial")
                return self.export_rc, "", "no space left on device"
            shutil.copyfile(self.export_from, dest)
            return 0, "", ""
        for key, answer in self.answers.items():
            if tuple(argv[:len(key)]) == key:
                return answer
        raise AssertionError("unexpected command %r" % (argv,))


def packed(tmp_path, compression, source="docker"):
    raw = docker_archive(str(tmp_path / "raw.tar")) if source == "docker" else oci_archive(str(tmp_path / "raw.tar"))
    out = str(tmp_path / ("a.tar" + {"zstd": ".zst", "gzip": ".gz", "none": ""}[compression]))
    store = Store(FakeRunner(export_from=raw), source)
    doc = save(store, ["docker.io/kstest/app:1"], out, compression, 3 if compression == "zstd" else 6)
    with open(sidecar_path(out), "w") as f:
        f.write(sidecar_text(doc))
    return out, doc


@pytest.mark.parametrize("ref,want", [
    ("pause:3.9", "docker.io/library/pause:3.9"),
    ("busybox", "docker.io/library/busybox:latest"),
    ("kstest/app:1", "docker.io/kstest/app:1"),
    ("docker.io/kstest/app:1", "docker.io/kstest/app:1"),
    ("index.docker.io/library/pause:3.9", "docker.io/library/pause:3.9"),
    ("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9"),
    ("localhost:5000/team/app:v1.2-rc_3", "localhost:5000/team/app:v1.2-rc_3"),
    ("localhost/app", "localhost/app:latest"),
    ("contoso.azurecr.io/base/python:3.11", "contoso.azurecr.io/base/python:3.11"),
])
def test_normalize_ref(ref, want):
    assert normalize_ref(ref) == want


@pytest.mark.parametrize("ref", ["", " pause", "Pause:3.9", "pause:", "pause@sha256:" + "a" * 64, "a//b", "pause:3 9",
                                 "pause:-x", None])
def test_normalize_ref_rejects(ref):
    with pytest.raises(ValueError):
        normalize_ref(ref)


def test_parse_sha256():
    assert parse_sha256("sha256:" + "A" * 64) == "a" * 64
    assert parse_sha256("b" * 64) == "b" * 64
    for bad in ("sha256:abc", "md5:" + "a" * 64, "g" * 64, ""):
        with pytest.raises(ValueError):
            parse_sha256(bad)


@pytest.mark.parametrize("compression", ["zstd", "gzip", "none"])
def test_save_puts_the_index_first_and_a_rerun_reads_no_layer_bytes(tmp_path, compression):
    out, doc = packed(tmp_path, compression)
    assert detect_compression(out) == compression
    assert doc["images"] == [{"ref": "docker.io/kstest/app:1", "id": "sha256:" + CONFIG_HEX, "manifest": None}]
    assert doc["sha256"] == hashlib.sha256(open(out, "rb").read()).hexdigest()
    assert doc["size"] == os.path.getsize(out)
    index, nread = read_index(out)
    assert index["images"] == doc["images"]
    assert nread < 64 * 1024 < len(LAYER)
    # Only the archive and nothing else is left in the directory (temp files removed).
    assert sorted(os.listdir(str(tmp_path))) == sorted(["raw.tar", os.path.basename(out), os.path.basename(out) + ".json"])
    # The runtime sees the original members after ours, unchanged.
    listing = subprocess.run(["tar", "-t", "-a", "-f", out], check=True, capture_output=True, text=True).stdout.split()
    assert listing[0] == INDEX_MEMBER
    assert listing[1:] == [LAYER_HEX + "/layer.tar", CONFIG_HEX + ".json", "manifest.json"]


def test_oci_export_records_manifest_digests(tmp_path):
    out, doc = packed(tmp_path, "zstd", source="containerd")
    assert doc["source"] == "containerd"
    assert doc["images"] == [{"ref": "docker.io/kstest/app:1", "id": "sha256:" + CONFIG_HEX,
                              "manifest": "sha256:" + MANIFEST_HEX}]


def test_plain_docker_save_is_read_to_its_end(tmp_path):
    raw = docker_archive(str(tmp_path / "plain.tar"), tags=("kstest/app:1", "kstest/app:latest"))
    subprocess.run(["zstd", "-q", raw, "-o", raw + ".zst"], check=True)
    index, nread = read_index(raw + ".zst")
    assert [i["ref"] for i in index["images"]] == ["docker.io/kstest/app:1", "docker.io/kstest/app:latest"]
    assert nread > len(LAYER)


@pytest.mark.parametrize("compression", ["zstd", "gzip"])
def test_truncated_archive_without_index_fails_clearly(tmp_path, compression):
    raw = docker_archive(str(tmp_path / "plain.tar"))
    argv = ["zstd", "-q", raw, "-o", raw + ".c"] if compression == "zstd" else ["sh", "-c", "gzip -c %s > %s.c" % (raw, raw)]
    subprocess.run(argv, check=True)
    with open(raw + ".c", "r+b") as f:
        f.truncate(os.path.getsize(raw + ".c") // 2)
    with pytest.raises(ArchiveError) as err:
        read_index(raw + ".c")
    assert raw + ".c" in str(err.value)


def test_verify_catches_a_corrupt_archive_before_loading(tmp_path):
    out, doc = packed(tmp_path, "zstd")
    with open(out, "r+b") as f:
        f.seek(os.path.getsize(out) - 100)
        f.write(b"\0" * 10)
    store = Store(FakeRunner(answers={("docker", "images"): (0, "", "")}), "docker")
    with pytest.raises(ArchiveError) as err:
        ensure_loaded(store, out)
    assert "does not match" in str(err.value) and "(from sidecar)" in str(err.value) and "nothing was loaded" in str(err.value)
    assert not any(c[:2] == ["docker", "load"] for c in store.runner.calls)


def test_load_without_any_checksum_is_refused(tmp_path):
    out, _doc = packed(tmp_path, "none")
    os.unlink(sidecar_path(out))
    store = Store(FakeRunner(answers={("docker", "images"): (0, "", "")}), "docker")
    with pytest.raises(ArchiveError) as err:
        ensure_loaded(store, out)
    assert "no checksum" in str(err.value)


def test_nothing_to_load_reads_only_the_head(tmp_path):
    out, _doc = packed(tmp_path, "zstd")
    images = "kstest/app:1 sha256:%s 2.98MB\n" % CONFIG_HEX
    store = Store(FakeRunner(answers={("docker", "images"): (0, images, "")}), "docker")
    res = ensure_loaded(store, out, check=False)
    assert res["changed"] is False and res["loaded"] == [] and res["kept"] == ["docker.io/kstest/app:1"]
    assert res["sha256"] is None and res["bytes_read"] < 64 * 1024
    assert [c[:2] for c in store.runner.calls] == [["docker", "images"]]


def test_failed_export_leaves_no_archive_and_no_temp_files(tmp_path):
    raw = docker_archive(str(tmp_path / "raw.tar"))
    store = Store(FakeRunner(export_from=raw, export_rc=1), "docker")
    out = str(tmp_path / "a.tar.zst")
    with pytest.raises(ArchiveError) as err:
        save(store, ["docker.io/kstest/app:1"], out, "zstd", 3)
    assert "no space left" in str(err.value)
    assert sorted(os.listdir(str(tmp_path))) == ["raw.tar"]


CTR_LS = "\n".join([
    "REF  TYPE  DIGEST  SIZE  PLATFORMS  LABELS",
    "docker.io/kstest/app:1 application/vnd.docker.distribution.manifest.v2+json sha256:%s 1.9 MiB linux/amd64 -" % ("cd" * 32),
    "registry.k8s.io/pause:3.9 application/vnd.oci.image.index.v1+json sha256:%s 311.6 KiB linux/amd64,linux/arm64 "
    "io.cri-containerd.image=managed,io.cri-containerd.pinned=pinned" % ("ef" * 32),
    "sha256:%s application/vnd.oci.image.index.v1+json sha256:%s 311.6 KiB linux/amd64 -" % ("12" * 32, "ef" * 32),
]) + "\n"


def test_containerd_store_parsing_and_digest_comparison():
    manifest = json.dumps({"config": {"digest": "sha256:" + CONFIG_HEX}})
    runner = FakeRunner(answers={("ctr", "--namespace", "k8s.io", "images", "ls"): (0, CTR_LS, ""),
                                 ("ctr", "--namespace", "k8s.io", "content", "get"): (0, manifest, "")})
    store = Store(runner, "containerd")
    have = store.images()
    assert have["docker.io/kstest/app:1"]["manifest"] == "sha256:" + "cd" * 32
    assert have["docker.io/kstest/app:1"]["size"] == int(1.9 * (1 << 20))
    assert have["registry.k8s.io/pause:3.9"]["labels"][PIN_LABEL] == "pinned"
    wanted = [
        # docker-archive loaded into containerd: no manifest digest, compared by config (one ctr content get)
        {"ref": "docker.io/kstest/app:1", "id": "sha256:" + CONFIG_HEX, "manifest": None},
        # OCI export: compared by manifest digest, no extra call
        {"ref": "registry.k8s.io/pause:3.9", "id": None, "manifest": "sha256:" + "ef" * 32},
        {"ref": "docker.io/kstest/other:1", "id": "sha256:" + "00" * 32, "manifest": None},
    ]
    missing, unpinned = present(store, wanted, have, pin=True)
    assert missing == ["docker.io/kstest/other:1"]
    assert unpinned == ["docker.io/kstest/app:1"]
    assert sum(1 for c in runner.calls if "content" in c) == 1


def test_docker_store_ignores_untagged_images():
    out = "kstest/app:1 sha256:%s 2.98MB\n<none>:<none> sha256:%s 1MB\n" % (CONFIG_HEX, "11" * 32)
    store = Store(FakeRunner(answers={("docker", "images"): (0, out, "")}), "docker")
    assert list(store.images()) == ["docker.io/kstest/app:1"]


def test_parse_size():
    assert parse_size("2.98MB") == int(2.98 * (1 << 20))
    assert parse_size("311.6 KiB") == int(311.6 * 1024)
    assert parse_size("12B") == 12
    assert parse_size("n/a") == 0


@pytest.mark.parametrize("url, want", [
    ("https://acct.blob.core.windows.net/images/preload.tar.zst?sv=2022-11-02&sr=c&sig=a%2Fb",
     "https://acct.blob.core.windows.net/images/preload.tar.zst.json?sv=2022-11-02&sr=c&sig=a%2Fb"),
    ("http://172.30.213.1:8080/preload.tar.zst", "http://172.30.213.1:8080/preload.tar.zst.json"),
])
def test_sidecar_url_keeps_the_query(url, want):
    assert sidecar_url(url) == want


@pytest.mark.parametrize("url, message", [
    ("ftp://host/preload.tar", "is not an http:// or https:// URL"),
    ("/opt/preload.tar", "is not an http:// or https:// URL"),
    ("https://host/images/", "names no file"),
    ("https://host/preload.tar#part", "has a fragment"),
])
def test_sidecar_url_refuses_what_is_not_an_archive_url(url, message):
    with pytest.raises(ValueError) as err:
        sidecar_url(url)
    assert message in str(err.value)


def test_pause_conflict_message_names_the_variable_the_file_and_the_image():
    sources = {
        "/etc/default/kubelet": 'KUBELET_EXTRA_ARGS="--pod-infra-container-image=registry.k8s.io/pause:3.8"\n',
        "/var/lib/kubelet/kubeadm-flags.env": 'KUBELET_KUBEADM_ARGS="--pod-infra-container-image=pause:3.9"\n',
        "/etc/missing": None,
    }
    conflicts = pause_conflicts(sources, "registry.k8s.io/pause:3.9")
    assert conflicts == ["/etc/default/kubelet names registry.k8s.io/pause:3.8",
                         "/var/lib/kubelet/kubeadm-flags.env names pause:3.9"]
    msg = conflict_message("image_preload_pause_image", "registry.k8s.io/pause:3.9", conflicts)
    assert msg.startswith("image_preload_pause_image (registry.k8s.io/pause:3.9) is not the pause image this node uses: "
                          "/etc/default/kubelet names registry.k8s.io/pause:3.8; /var/lib/kubelet/kubeadm-flags.env")
    assert "Set image_preload_pause_image to it" in msg


def test_the_boot_loader_is_the_package_the_role_installs_and_runs_on_the_standard_library(tmp_path):
    """kubescale-image-preload.service runs `python3 -m kubescale_images.boot` over the modules image_preload's vars
    install, on a node with no Ansible: those modules alone, on the system Python with no site packages, load the
    archives of a directory (a docker on PATH that lacks the image loads it, then shows it)."""
    import yaml

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
        __file__))))))
    with open(os.path.join(repo, "roles", "image_preload", "vars", "main.yml")) as f:
        role_vars = yaml.safe_load(f)
    package = tmp_path / "lib" / role_vars["__image_preload_loader_package"]
    package.mkdir(parents=True)
    for entry in role_vars["__image_preload_boot_files"]:
        if entry.get("src", "").startswith("{{ role_path }}/../../plugins/module_utils/images/"):
            name = os.path.basename(entry["src"])
            shutil.copyfile(os.path.join(repo, "plugins", "module_utils", "images", name), str(package / name))
    images = tmp_path / "images"
    images.mkdir()
    doc = packed(images, "zstd")[1]
    loaded = tmp_path / "loaded"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(
        "#!/bin/sh\n"
        "if [ \"$1\" = images ]; then [ -f %s ] && echo 'kstest/app:1 %s 1.0MiB'; exit 0; fi\n"
        "if [ \"$1\" = load ]; then cat > /dev/null; touch %s; exit 0; fi\n"
        "if [ \"$1\" = info ]; then echo %s; exit 0; fi\n"
        "exit 3\n" % (loaded, doc["images"][0]["id"], loaded, tmp_path))
    (bin_dir / "docker").chmod(0o755)
    env = dict(PATH="%s:/usr/bin:/bin" % bin_dir, PYTHONPATH=str(tmp_path / "lib"))
    argv = ["/usr/bin/python3", "-s", "-m", role_vars["__image_preload_loader_package"] + ".boot", "--runtime",
            "docker", "--dir", str(images)]
    first = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    assert "loaded 1, already present 0" in first.stdout and loaded.exists()
    again = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert again.returncode == 0 and "loaded 0, already present 1" in again.stdout
