#!/usr/bin/env bash
# Run every molecule scenario on the lab base image, in two streams side by side (scripts/parallel.sh), each with a
# host loop device of its own as its nodes' /dev/sdb (the emulated Azure resource disk; the local_ssd scenario
# rewrites it between cases). Scenarios named on the command line run alone, one after the other.
set -euo pipefail
cd "$(dirname "$0")/.."
KUBESCALE_LAB_IMAGE="$(/usr/bin/python3 lab/lab.py image)"
# Debian 11 (Python 3.9, no tomllib) for the toml_legacy scenario
KUBESCALE_LEGACY_IMAGE="$(/usr/bin/python3 lab/lab.py legacy-image)"
export KUBESCALE_LAB_IMAGE KUBESCALE_LEGACY_IMAGE

# stream SCENARIO...: the scenarios one after the other on a fresh loop device; stops at the first that fails.
stream() {
  local img rc=0
  img="$(mktemp /var/tmp/kubescale-molecule-disk.XXXXXX)"
  truncate -s 1G "$img"
  KUBESCALE_MOLECULE_DISK="$(losetup --find --show "$img")"
  export KUBESCALE_MOLECULE_DISK
  for scenario in "$@"; do
    molecule test -s "$scenario" || { rc=$?; break; }
  done
  losetup -d "$KUBESCALE_MOLECULE_DISK" 2>/dev/null || true
  rm -f "$img"
  return "$rc"
}
export -f stream

if [ "$#" -gt 0 ]; then
  stream "$@"
  exit
fi
# About the same length each (local_ssd and preload are the longest); every scenario is in exactly one stream.
all="$(find molecule -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort | tr '\n' ' ')"
a="local_ssd runtime toml_legacy"
b="preload bake arp_sysctl"
# shellcheck disable=SC2086  # the lists split into words on purpose
[ "$(echo $a $b | tr ' ' '\n' | sort | tr '\n' ' ')" = "$all" ] ||
  { echo "molecule.sh: the streams ($a | $b) must hold every scenario ($all)" >&2; exit 1; }
bash scripts/parallel.sh "molecule-a=stream $a" "molecule-b=stream $b"
