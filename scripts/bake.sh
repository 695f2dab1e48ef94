#!/usr/bin/env bash
# `make bake`: bake a lab node image with Debian's packer (docker builder, ansible provisioner running
# playbooks/bake.yml), then boot a node from it with a blank emulated resource disk and check that
# kubescale-image-preload.service loaded the preloaded images at boot.
set -euo pipefail
cd "$(dirname "$0")/.."
base="$(/usr/bin/python3 -m lab image)"
pause="$(/usr/bin/python3 -m lab pause-image)"
baked=kubescale-lab-baked:latest
node=kubescale-bake-boot
img="$(mktemp /var/tmp/kubescale-bake-disk.XXXXXX)"
loop=""
cleanup() {
  docker rm -f -v "$node" >/dev/null 2>&1 || true
  if [ -n "$loop" ]; then losetup -d "$loop" 2>/dev/null || true; fi
  rm -f "$img"
}
trap cleanup EXIT

# The lab's kubelet and kubeadm "packages" (lab/fixtures/kubeadm-packages.sh and what it installs), for the image
packages="$(mktemp -d)"
trap 'cleanup; rm -rf "$packages"' EXIT
cp lab/fixtures/kubeadm-packages.sh lab/fixtures/kubelet-standin.py lab/fixtures/kubelet.service \
  lab/fixtures/10-kubeadm.conf "$packages/"
awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' lab/k8s/go.mod > "$packages/kubelet-version"

previous="$(docker image inspect -f '{{.Id}}' "$baked" 2>/dev/null || true)"
PACKER_LOG=0 packer build -force -color=false -var "base_image=$base" -var "pause_image=$pause" \
  -var "packages_dir=$packages" packer/lab-node.json
# The image this bake replaced (635 MB, untagged by -force) is removed: repeated bakes on one machine do not pile up.
if [ -n "$previous" ] && [ "$previous" != "$(docker image inspect -f '{{.Id}}' "$baked")" ]; then
  docker rmi "$previous" >/dev/null 2>&1 || true
fi

truncate -s 512M "$img"
loop="$(losetup --find --show "$img")"
docker rm -f -v "$node" >/dev/null 2>&1 || true
docker run -d --name "$node" --stop-signal SIGRTMIN+3 --cap-add SYS_ADMIN --cap-add NET_ADMIN --cgroupns=host \
  --security-opt seccomp=unconfined -v /sys/fs/cgroup:/sys/fs/cgroup:rw -v /var/lib/docker \
  --tmpfs /run --tmpfs /run/lock --device "$loop:/dev/sdb" "$baked" >/dev/null
state=""
for _ in $(seq 1 60); do  # systemd's bus comes up a moment after the container starts
  state="$(docker exec "$node" systemctl is-system-running --wait 2>/dev/null || true)"
  case "$state" in running|degraded) break ;; esac
  sleep 1
done
images="$(docker exec "$node" docker image ls --format '{{.Repository}}:{{.Tag}}')"
log="$(docker exec "$node" journalctl -u kubescale-image-preload.service -o cat --no-pager | grep 'kubescale-image-preload:' || true)"
echo "bake: booted node state: $state"
echo "bake: images after boot: $images"
echo "bake: $log"
if [ "$state" != running ] && [ "$state" != degraded ]; then echo "bake: the node did not boot" >&2; exit 1; fi
if ! grep -qx "$pause" <<<"$images"; then echo "bake: $pause was not loaded at boot" >&2; exit 1; fi
echo "bake: $baked boots and loads its preloaded images"
