"""image_preload from a URL the node downloads itself (image_preload_url), against Debian's nginx on the lab network
standing in for Azure Blob storage (lab/blob.py), on one converged CPU worker.

The worker holds archive A (copied from the controller by the converge). The blob serves archive B (the same images,
another compression level: other bytes, another sha256) three ways: whole, truncated (a partial upload), and A's
bytes under B's name (a blob overwritten by another archive). Each bad way fails on the node with the node's store
unchanged (its archive directory, byte for byte, no temporary file left, the runtime's images); a stale pin fails on
the controller before any node is touched; the good one is predicted by --check, downloaded once by the node (the
controller sends no archive), loaded, and a second run downloads nothing.
"""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile

import json_report
import pytest
from labnode import node

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")
HOST = "cpu-1"
DIR = "/opt/kubescale/images"
ARCHIVE = DIR + "/preload.tar.zst"
PAUSE = "docker.io/kubescale-lab/pause:3.9"

pytestmark = pytest.mark.usefixtures("lab")


def env():
    return dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
                ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"))


def preload(extra, *args):
    """The image_preload tuning of node_cpu.yml on HOST: (rc, {task name: result}, output)."""
    proc = subprocess.run(
        ["ansible-playbook", "-i", HOSTS, "playbooks/node_cpu.yml", "-l", HOST, "--tags", "kubescale_image_preload",
         "-e", json.dumps(extra), *args], cwd=REPO, capture_output=True, text=True, check=False,
        env=dict(env(), ANSIBLE_STDOUT_CALLBACK="json"))
    results = {}
    try:
        for task, host, res in json_report.results(proc.stdout):
            if host == HOST:
                results[task.split(" : ")[-1]] = res
    except ValueError:
        pass
    return proc.returncode, results, proc.stdout[-4000:] + proc.stderr[-2000:]


def store():
    """The node's archive directory byte for byte, and the runtime's images."""
    listing = node(HOST, "sh", "-c", "cd %s && ls -A && sha256sum *" % DIR).stdout
    images = node(HOST, "docker", "image", "ls", "--no-trunc", "--format", "{{.Repository}}:{{.Tag}} {{.ID}}").stdout
    return listing, sorted(images.split("\n"))


def failed_msgs(results):
    return " | ".join(str(r.get("msg")) for r in results.values() if r.get("failed"))


@pytest.fixture(scope="module")
def blob():
    from lab.blob import Blob

    root = tempfile.mkdtemp(prefix="kubescale-blob-root-", dir="/var/tmp")
    os.chmod(root, 0o755)
    try:
        # Archive B: what the lab preloads, saved at another zstd level by the collection's own module.
        for sub in ("good", "truncated", "overwritten"):
            os.makedirs(os.path.join(root, sub))
        good = os.path.join(root, "good", "preload.tar.zst")
        save = dict(state="saved", path=good, images=[PAUSE], runtime="docker", compression="zstd",
                    compression_level=19)
        proc = subprocess.run(
            ["ansible", "localhost", "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=/usr/bin/python3",
             "-m", "kubescale.tuning.image_archive", "-a", json.dumps(save)],
            cwd=REPO, capture_output=True, text=True, check=False, env=env())
        assert proc.returncode == 0, proc.stdout + proc.stderr
        with open(good + ".json") as f:
            sidecar = json.load(f)
        with open(good, "rb") as f:
            data = f.read()
        assert hashlib.sha256(data).hexdigest() == sidecar["sha256"]
        for sub, body in (("truncated", data[: len(data) // 2]),
                          ("overwritten", open(os.path.join(REPO, "lab", ".state", "images", "preload.tar.zst"),
                                               "rb").read())):
            with open(os.path.join(root, sub, "preload.tar.zst"), "wb") as f:
                f.write(body)
            shutil.copy(good + ".json", os.path.join(root, sub, "preload.tar.zst.json"))
        for dirpath, _dirs, files in os.walk(root):
            for name in files:
                os.chmod(os.path.join(dirpath, name), 0o644)
        with Blob(root) as server:
            server.sha256 = sidecar["sha256"]
            yield server
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(root + "-cache", ignore_errors=True)
        # Back to the lab's own archive, copied from the controller, as every other test expects.
        node(HOST, "rm", "-f", ARCHIVE, ARCHIVE + ".json")
        rc, _results, out = preload({})
        assert rc == 0, out


def source(blob, sub, sha=None):
    # A cache directory that does not exist yet, as on a controller that never built an archive.
    return dict(image_preload_url=blob.url(sub + "/preload.tar.zst") + "?sv=2022-11-02&sr=c&sig=lab",
                image_preload_url_sha256=sha or blob.sha256, image_preload_url_retries=1,
                image_preload_cache_dir=os.path.join(blob.root + "-cache", sub))


@pytest.mark.parametrize("sub, expect", [
    ("truncated", "did not match"),
    ("overwritten", "did not match"),
])
def test_a_bad_download_fails_on_the_node_and_leaves_its_store_unchanged(blob, sub, expect):
    before = store()
    served = len(blob.requests())
    rc, results, out = preload(source(blob, sub))
    assert rc != 0, out
    assert expect in failed_msgs(results), out
    assert store() == before
    # Retried once (image_preload_url_retries: 1): two downloads of the archive by the node, none by the controller.
    got = [r for r in blob.requests()[served:] if r["path"].endswith(".tar.zst")]
    assert len(got) == 2 and all(r["addr"] != "172.30.213.1" for r in got), got


def test_a_stale_pin_fails_on_the_controller_before_the_node_is_touched(blob):
    before = store()
    lab_sha = json.loads(node(HOST, "cat", ARCHIVE + ".json").stdout)["sha256"]
    served = len(blob.requests())
    rc, results, out = preload(source(blob, "good", sha=lab_sha))
    assert rc != 0, out
    assert "image_preload_url_sha256 (%s) is not the sha256 the sidecar" % lab_sha in failed_msgs(results), out
    assert store() == before
    assert [r["path"] for r in blob.requests()[served:]] == ["/good/preload.tar.zst.json"]

    # An image asked for that the archive at the URL does not hold.
    rc, results, out = preload(dict(source(blob, "good"), image_preload_images=["registry.k8s.io/coredns:1.11.1"]))
    assert rc != 0, out
    assert "the archive at image_preload_url lacks registry.k8s.io/coredns:1.11.1" in failed_msgs(results), out
    assert store() == before


def test_a_bad_url_is_refused_before_anything_is_fetched(blob):
    before = store()
    served = len(blob.requests())
    rc, results, out = preload(dict(image_preload_url="ftp://blob/preload.tar.zst", image_preload_url_sha256="0" * 64))
    assert rc != 0
    assert "image_preload_url: 'ftp://blob/preload.tar.zst' is not an http:// or https:// URL" in failed_msgs(results)
    rc, results, out = preload(dict(image_preload_url=blob.url("good/preload.tar.zst"), image_preload_url_sha256="abc"))
    assert rc != 0
    assert "image_preload_url_sha256 must be the archive's sha256 (64 hex digits)" in failed_msgs(results)
    assert store() == before and len(blob.requests()) == served


def test_the_node_downloads_the_pinned_archive_once_and_the_controller_sends_none(blob):
    before = store()
    want = source(blob, "good")
    rc, checked, out = preload(want, "--check")
    assert rc == 0, out
    assert store() == before
    predicted = {name for name, r in checked.items() if r.get("changed")}
    assert "Download the archive from image_preload_url on the node, verified by sha256" in predicted

    served = len(blob.requests())
    rc, real, out = preload(want)
    assert rc == 0, out
    assert {name for name, r in real.items() if r.get("changed")} == predicted
    assert "Copy the archive to the node" not in {n for n, r in real.items() if not r.get("skipped")}
    got = [r for r in blob.requests()[served:] if r["path"] == "/good/preload.tar.zst"]
    assert len(got) == 1 and got[0]["status"] == 200 and got[0]["addr"] != "172.30.213.1", got
    sha = node(HOST, "sha256sum", ARCHIVE).stdout.split()[0]
    assert sha == blob.sha256
    assert json.loads(node(HOST, "cat", ARCHIVE + ".json").stdout)["sha256"] == blob.sha256
    fact = json.loads(node(HOST, "cat", "/etc/ansible/facts.d/kubescale_image_preload.fact").stdout)
    assert fact["sha256"] == blob.sha256
    assert node(HOST, "ls", "-A", DIR).stdout.split() == ["preload.tar.zst", "preload.tar.zst.json"]
    assert PAUSE.split("docker.io/")[1] in node(HOST, "docker", "image", "ls", "--format",
                                                "{{.Repository}}:{{.Tag}}").stdout

    served = len(blob.requests())
    rc, again, out = preload(want)
    assert rc == 0, out
    assert [n for n, r in again.items() if r.get("changed")] == []
    # The controller reads the sidecar once per run; the node downloads nothing.
    assert [r["path"] for r in blob.requests()[served:]] == ["/good/preload.tar.zst.json"]
