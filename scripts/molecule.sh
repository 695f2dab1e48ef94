#!/usr/bin/env bash
# Run every molecule scenario on the lab base image, with a host loop device as the nodes' /dev/sdb
# (the emulated Azure resource disk; the local_ssd scenario rewrites it between cases).
# One after the other: make test runs them beside the lab, and two molecule streams beside it loaded this 2-core
# machine enough that a kubeadm etcd read polled by site_twice.sh timed out (5 s) while a member moved.
set -euo pipefail
cd "$(dirname "$0")/.."
KUBESCALE_LAB_IMAGE="$(/usr/bin/python3 -m lab image)"
# The lab's Kubernetes build (kubeadm and the control plane) for the kubeadm_stacked scenario: cached, seconds when warm
KUBESCALE_K8S_CACHE="$(dirname "$(bash lab/k8s/build.sh | tail -1)")"
# Debian 11 (Python 3.9, no tomllib) for the toml_legacy scenario
KUBESCALE_LEGACY_IMAGE="$(/usr/bin/python3 -m lab legacy-image)"
# The resource disk in memory, as fast as a VM's local SSD (the lab's etcd classes have theirs there too, lab/disks.py)
img="$(mktemp /dev/shm/kubescale-molecule-disk.XXXXXX)"
truncate -s 1G "$img"
KUBESCALE_MOLECULE_DISK="$(losetup --find --show "$img")"
export KUBESCALE_LAB_IMAGE KUBESCALE_LEGACY_IMAGE KUBESCALE_MOLECULE_DISK KUBESCALE_K8S_CACHE
cleanup() { losetup -d "$KUBESCALE_MOLECULE_DISK" 2>/dev/null || true; rm -f "$img"; }
trap cleanup EXIT
molecule test --all "$@"
