#!/usr/bin/env bash
# Build the execution environment (execution-environment.yml) with ansible-builder:
#
#   scripts/ee.sh [--lab] [TAG]       TAG defaults to kubescale-tuning-ee:<galaxy.yml version>
#
# The collection goes in as a tarball built from this checkout (ee/collections, which ee/requirements.yml names).
# Without --lab the definition's own base image (RPM-based, from a registry) and dnf are used. With --lab (`make ee`)
# the base image is the lab's Debian 12 one (python3 -m lab ee-base-image: no registry is reachable here) and apt-get
# the package manager, passed as build arguments. The container runtime is docker unless EE_CONTAINER_RUNTIME says.
set -euo pipefail
cd "$(dirname "$0")/.."
lab=""
if [ "${1:-}" = "--lab" ]; then lab=1; shift; fi
version="$(sed -n 's/^version: *//p' galaxy.yml)"
tag="${1:-kubescale-tuning-ee:$version}"

rm -rf ee/collections
mkdir -p ee/collections
out="$(mktemp -d)"
context="$(mktemp -d)"
trap 'rm -rf "$out" "$context"' EXIT
ansible-galaxy collection build --force --output-path "$out" . >/dev/null
mv "$out/kubescale-tuning-$version.tar.gz" ee/collections/kubescale-tuning.tar.gz

# Disk: a build from nothing grows the docker root by 4.3 GB at its peak (measured on the lab: the base stage's
# installed packages, in its container and then its committed layer) and keeps 2.2 GB, the image's layers. A rebuild
# with only the collection changed reuses the base stage from the build cache (execution-environment.yml). Dangling
# images derived from the lab's base image are removed: those earlier runs left before the build, those this build left
# (its stages, the image it untagged) after it, so repeated builds on one machine do not pile up. Too little room fails
# here, before the build, with the figures.
dangling() { docker images -q --no-trunc -f dangling=true -f label=io.kubescale.lab | sort; }
runtime="${EE_CONTAINER_RUNTIME:-docker}"
if [ "$runtime" = docker ]; then
  docker image prune -f --filter label=io.kubescale.lab >/dev/null
  before="$(dangling)"
  root="$(docker info -f '{{.DockerRootDir}}')"
  need_mb="${EE_MIN_FREE_MB:-5000}"
  free_mb="$(df -Pm "$root" | awk 'NR == 2 {print $4}')"
  if [ "$free_mb" -lt "$need_mb" ]; then
    echo "ee: $root has $free_mb MB free; the build needs $need_mb MB (EE_MIN_FREE_MB). Free space: docker system df" >&2
    exit 1
  fi
fi

args=()
if [ -n "$lab" ]; then
  base="$(/usr/bin/python3 -m lab ee-base-image)"
  # PKGMGR_PRESERVE_CACHE: the builder's clean step runs `$PKGMGR clean all`, which is dnf's syntax (the lab's base
  # image keeps no apt lists to clean).
  args+=(--build-arg "EE_BASE_IMAGE=$base" --build-arg PKGMGR=/usr/bin/apt-get --build-arg PKGMGR_PRESERVE_CACHE=1)
fi
ansible-builder build -f execution-environment.yml -c "$context" -t "$tag" \
  --container-runtime "$runtime" "${args[@]}" >"$out/build.log" 2>&1 \
  || { tail -60 "$out/build.log"; echo "ee: ansible-builder build failed"; exit 1; }
if [ "$runtime" = docker ]; then
  comm -13 <(echo "$before") <(dangling) | xargs -r docker rmi >/dev/null 2>&1 || true
fi
echo "ee: built $tag" >&2
echo "$tag"
