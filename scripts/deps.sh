#!/usr/bin/env bash
# Everything `make site` and `make test` need on a fresh Debian 12 machine (run as root):
# Debian packages, a running dockerd, the pinned Python venv, and the collection link.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"

APT_PACKAGES=(docker.io debootstrap ntfs-3g openssh-client git python3-venv fio zstd rsync iproute2 util-linux shellcheck busybox-static packer)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# dockerd: start it in the background when nothing answers (no systemd on these machines).
if ! docker info >/dev/null 2>&1; then
  echo "deps: starting dockerd"
  nohup /usr/sbin/dockerd >/var/log/kubescale-dockerd.log 2>&1 &
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "deps: dockerd did not start, see /var/log/kubescale-dockerd.log" >&2; exit 1; }
fi

# The pinned controller tooling. /usr/bin/python3: the pyenv shim on PATH may point elsewhere.
stamp=.venv/.requirements.sha256
want="$(sha256sum requirements-dev.txt | cut -d' ' -f1)"
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "deps: building .venv from requirements-dev.txt"
  /usr/bin/python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt
  echo "$want" > "$stamp"
fi

# The repo root is the collection: make it importable as kubescale.tuning without installing it.
mkdir -p .collections/ansible_collections/kubescale
ln -sfn ../../.. .collections/ansible_collections/kubescale/tuning
