"""Against the converged lab: each tuning's state on every worker node, read with testinfra (through docker exec).

One test per tuning, as an operator would check a node by hand: the sysctls, the SSD and its boot unit, dockerd on
overlay2 on the SSD, the kubelet's pull settings, the preloaded images and their boot-time reload.
"""

import json
import os

import pytest
import testinfra
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = os.path.join(REPO, "inventories", "lab", "hosts.yml")

pytestmark = pytest.mark.usefixtures("lab")


def workers():
    if not os.path.exists(HOSTS):
        return []
    children = yaml.safe_load(open(HOSTS))["all"]["children"]
    return sorted(h["lab_container"] for group in ("kube_node_cpu", "kube_node_gpu")
                  for h in ((children.get(group) or {}).get("hosts") or {}).values())


@pytest.fixture(params=workers())
def host(request):
    return testinfra.get_host("docker://" + request.param)


def test_arp_cache_thresholds_persisted(host):
    conf = host.file("/etc/sysctl.d/90-kubescale-arp.conf")
    assert conf.exists and conf.mode == 0o644
    for family in ("ipv4", "ipv6"):
        for key, value in (("gc_thresh1", 80000), ("gc_thresh2", 90000), ("gc_thresh3", 100000)):
            assert conf.contains(r"^net\.%s\.neigh\.default\.%s *= *%d$" % (family, key, value))


def test_the_local_ssd_is_mounted_and_comes_back_at_boot(host):
    ssd = host.mount_point("/mnt/local-ssd")
    assert ssd.exists and ssd.filesystem == "ext4" and "noatime" in ssd.options
    unit = host.service("kubescale-local-ssd.service")
    assert unit.is_enabled
    assert host.file("/mnt/local-ssd/docker").is_directory


def test_dockerd_runs_overlay2_on_the_ssd_with_ten_downloads(host):
    docker = host.service("docker.service")
    assert docker.is_running and docker.is_enabled
    daemon = json.loads(host.file("/etc/docker/daemon.json").content_string)
    assert daemon["storage-driver"] == "overlay2" and daemon["data-root"] == "/mnt/local-ssd/docker"
    assert daemon["max-concurrent-downloads"] == 10 and daemon["live-restore"] is True
    info = json.loads(host.check_output("docker info --format '{{json .}}'"))
    assert info["DockerRootDir"] == "/mnt/local-ssd/docker" and info["Driver"] == "overlay2"
    assert not host.file("/etc/docker/daemon.json.kubescale-before-move").exists  # no move left half done


def test_the_kubelet_pulls_in_parallel(host):
    config = yaml.safe_load(host.file("/var/lib/kubelet/config.yaml").content_string)
    assert config["serializeImagePulls"] is False


def test_the_preloaded_images_are_in_the_store_and_reloaded_at_boot(host):
    assert host.service("kubescale-image-preload.service").is_enabled
    archives = host.file("/opt/kubescale/images").listdir()
    assert any(name.endswith((".tar.zst", ".tar.gz", ".tar")) for name in archives), archives
    images = host.check_output("docker image ls --format '{{.Repository}}:{{.Tag}}'").split()
    assert "kubescale-lab/pause:3.9" in images


def test_every_tuning_recorded_what_it_applied(host):
    facts = host.file("/etc/ansible/facts.d")
    assert {"kubescale_arp_sysctl.fact", "kubescale_local_ssd.fact", "kubescale_docker_overlay2.fact",
            "kubescale_kubelet_pulls.fact", "kubescale_image_preload.fact"} <= set(facts.listdir())
    docker_fact = json.loads(host.file("/etc/ansible/facts.d/kubescale_docker_overlay2.fact").content_string)
    assert docker_fact["data_root"] == "/mnt/local-ssd/docker"
