#!/usr/bin/env bash
# Run every molecule scenario on the lab base image, with a host loop device as the nodes' /dev/sdb
# (the emulated Azure resource disk; the local_ssd scenario rewrites it between cases).
set -euo pipefail
cd "$(dirname "$0")/.."
KUBESCALE_LAB_IMAGE="$(/usr/bin/python3 lab/lab.py image)"
img="$(mktemp /var/tmp/kubescale-molecule-disk.XXXXXX)"
truncate -s 1G "$img"
KUBESCALE_MOLECULE_DISK="$(losetup --find --show "$img")"
export KUBESCALE_LAB_IMAGE KUBESCALE_MOLECULE_DISK
cleanup() { losetup -d "$KUBESCALE_MOLECULE_DISK" 2>/dev/null || true; rm -f "$img"; }
trap cleanup EXIT
molecule test --all "$@"
