"""The execution environment (execution-environment.yml, scripts/ee.sh), driven by ansible-runner against the lab.

The image is the one `make ee` built (KUBESCALE_EE_IMAGE names it), or built here when none is named. It must hold
this checkout's collection (every file's checksum in the installed collection's FILES.json equal to the file in the
tree) and the controller's Python dependencies; ansible-runner, with docker as its process isolation, must converge
the lab's CPU workers with node_cpu.yml from inside it, and a second run must change nothing.

The collection is not mounted into the container: only the lab's inventory and its SSH key are (read-only, at their
own paths, so the inventory's relative key path still resolves). The preload archive's builder is a CPU worker
(image_preload_builder), as a fleet builds it on a build host: the lab's default builder is the controller's own
docker, which the EE's container has no access to. So the workers are first converged from the checkout (the
controller's docker as the builder), which puts the preloaded images in that worker's store: on a lab just created
the builder would otherwise have nothing to save.
"""

import hashlib
import json
import os
import subprocess

import ansible_runner
import pytest
import yaml
from audit_lab import ENV, lab_hosts
from labnode import HOSTS, REPO

INVENTORIES = os.path.join(REPO, "inventories")
STATE = os.path.join(REPO, "lab", ".state")
# Where ansible-builder installs the Galaxy requirements, this collection among them.
EE_COLLECTIONS = "/usr/share/ansible/collections"
COLLECTION = EE_COLLECTIONS + "/ansible_collections/kubescale/tuning"

pytestmark = pytest.mark.usefixtures("lab")


@pytest.fixture(scope="module")
def image():
    tag = os.environ.get("KUBESCALE_EE_IMAGE")
    if not tag:
        proc = subprocess.run(["bash", "scripts/ee.sh", "--lab", "kubescale-tuning-ee:test"], cwd=REPO,
                              capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        tag = proc.stdout.split()[-1]
    return tag


@pytest.fixture(scope="module")
def builder_holds_the_images():
    proc = subprocess.run(
        ["ansible-playbook", "-i", HOSTS, "playbooks/node_cpu.yml", "-e", json.dumps({"kubescale_serial_kube_node_cpu": ["100%"]})],
        cwd=REPO, env=ENV, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def in_image(image, *argv):
    return subprocess.run(["docker", "run", "--rm", image] + list(argv), capture_output=True,
                          text=True, check=False)


def test_the_image_holds_this_checkout_and_the_controller_dependencies(image):
    proc = in_image(image, "ansible-galaxy", "collection", "list", "kubescale.tuning", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    assert list(listed) == [EE_COLLECTIONS + "/ansible_collections"], listed
    with open(os.path.join(REPO, "galaxy.yml")) as f:
        version = yaml.safe_load(f)["version"]
    assert listed[EE_COLLECTIONS + "/ansible_collections"]["kubescale.tuning"]["version"] == version

    files = json.loads(in_image(image, "cat", COLLECTION + "/FILES.json").stdout)["files"]
    checked = 0
    for entry in files:
        if entry["ftype"] != "file":
            continue
        with open(os.path.join(REPO, entry["name"]), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == entry["chksum_sha256"], entry["name"]
        checked += 1
    assert checked > 100, checked

    # The collections galaxy.yml depends on (from the pip ansible package), and what the controller-side plugins
    # import: the Kubernetes client (kubernetes.core.k8s) and the azure_rm inventory's Azure SDK.
    proc = in_image(image, "python3", "-c", "import kubernetes, azure.identity, azure.mgmt.compute, azure.mgmt.network")
    assert proc.returncode == 0, proc.stderr
    proc = in_image(image, "ansible-galaxy", "collection", "list", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    found = set()
    for collections in json.loads(proc.stdout).values():
        found.update(collections)
    assert {"community.docker", "ansible.posix", "community.general", "community.crypto", "azure.azcollection",
            "kubernetes.core", "kubescale.tuning"} <= found, sorted(found)


def converge(image, tmp_path, name):
    """node_cpu.yml over the lab's CPU workers through ansible-runner in the EE: the runner's Runner object."""
    pdd = tmp_path / name
    (pdd / "project").mkdir(parents=True)
    (pdd / "project" / "node_cpu.yml").write_text(
        "---\n- name: The CPU workers\n  ansible.builtin.import_playbook: kubescale.tuning.node_cpu\n")
    # The lab's ansible.cfg (ssh and pipelining settings); ANSIBLE_COLLECTIONS_PATH below replaces its collections path
    # (the checkout's) with the EE's own.
    with open(os.path.join(REPO, "ansible.cfg")) as f:
        (pdd / "project" / "ansible.cfg").write_text(f.read())
    os.symlink(os.path.join(INVENTORIES, "lab"), pdd / "inventory")
    return ansible_runner.run(
        private_data_dir=str(pdd), playbook="node_cpu.yml", quiet=True,
        process_isolation=True, process_isolation_executable="docker", container_image=image,
        container_options=["--network=host"],
        container_volume_mounts=["%s:%s:ro" % (INVENTORIES, INVENTORIES), "%s:%s:ro" % (STATE, STATE)],
        envvars={"ANSIBLE_COLLECTIONS_PATH": EE_COLLECTIONS},
        extravars={"kubescale_serial_kube_node_cpu": ["100%"], "image_preload_builder": lab_hosts(("kube_node_cpu",))[0],
                   "image_preload_cache_dir": "/tmp/kubescale-images"})


def played_from_the_image(runner):
    """The task paths the run reported: every role task's file is the EE's installed collection's."""
    paths = set()
    for event in runner.events:
        path = (event.get("event_data") or {}).get("task_path") or ""
        if "/kubescale/tuning/" in path:
            paths.add(path.split(":")[0])
    return paths


def test_runner_converges_the_cpu_workers_from_the_image_and_a_second_run_changes_nothing(
        image, tmp_path, builder_holds_the_images):
    workers = lab_hosts(("kube_node_cpu",))
    first = converge(image, tmp_path, "first")
    assert first.rc == 0, first.stdout.read()[-4000:]
    assert set(first.stats["ok"]) == set(workers), first.stats
    assert not first.stats["failures"] and not first.stats["dark"], first.stats
    paths = played_from_the_image(first)
    assert paths and all(p.startswith(COLLECTION + "/") for p in paths), sorted(paths)[:5]

    second = converge(image, tmp_path, "second")
    assert second.rc == 0, second.stdout.read()[-4000:]
    assert set(second.stats["ok"]) == set(workers), second.stats
    assert not second.stats["changed"], second.stats
    assert not second.stats["failures"] and not second.stats["dark"], second.stats
