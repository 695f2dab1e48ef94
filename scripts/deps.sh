#!/usr/bin/env bash
# Everything `make site` and `make test` need on a fresh Debian 12 machine (run as root):
# Debian packages, a running dockerd, the pinned Python venv, and the collection link.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"

APT_PACKAGES=(docker.io debootstrap ntfs-3g openssh-client git python3-venv fio zstd rsync iproute2 util-linux shellcheck busybox-static packer chromium nginx)
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

# The pinned controller tooling, in a venv per requirements digest under /var/cache/kubescale-tuning that every checkout
# on this machine shares (.venv is a link to it): building one is minutes of byte-compiling, a fresh clone finds it
# built. /usr/bin/python3: the pyenv shim on PATH may point elsewhere.
want="$(cat requirements-dev.txt requirements-azure.txt | sha256sum | cut -d' ' -f1)"
cache="${KUBESCALE_VENV_CACHE:-/var/cache/kubescale-tuning}"
venv="$cache/venv-${want:0:16}"
mkdir -p "$cache"
(
  flock 9  # make test runs deps in streams side by side: one builds, the others wait for it
  if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
    echo "deps: building $venv from requirements-dev.txt and requirements-azure.txt"
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -r requirements-dev.txt -r requirements-azure.txt
    echo "$want" > "$venv/.requirements.sha256"
  fi
  if [ "$(readlink .venv 2>/dev/null)" != "$venv" ]; then
    rm -rf .venv.new && ln -s "$venv" .venv.new
    [ -L .venv ] || rm -rf .venv  # a directory an older checkout built
    mv -T .venv.new .venv
  fi
) 9>"$cache/venv.lock"

# The repo root is the collection: make it importable as kubescale.tuning without installing it.
mkdir -p .collections/ansible_collections/kubescale
ln -sfn ../../.. .collections/ansible_collections/kubescale/tuning

# Go for the lab's control plane (lab/k8s): the machine's own in /usr/local/go when it is 1.21 or newer (it fetches the
# toolchain lab/k8s/go.mod names through the module proxy by itself); otherwise that toolchain, as a module from the
# module proxy, fetched with Debian's older go, into /usr/local/lib/kubescale-go.
GO_TOOLCHAIN=go1.26.8
go_ok() { [ -x "$1" ] && "$1" env GOVERSION 2>/dev/null | grep -Eq '^go1\.(2[1-9]|[3-9][0-9])'; }
if ! go_ok /usr/local/go/bin/go && ! go_ok /usr/local/lib/kubescale-go/bin/go; then
  echo "deps: no Go 1.21 or newer: fetching the $GO_TOOLCHAIN toolchain through the Go module proxy"
  dpkg-query -W -f='${Status}' golang-go 2>/dev/null | grep -q "install ok installed" || {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-go >/dev/null
  }
  tmp="$(mktemp -d)"
  dir="$(GOMODCACHE="$tmp" GOFLAGS=-mod=mod GOTOOLCHAIN=local /usr/lib/go-1.19/bin/go mod download -json \
         "golang.org/toolchain@v0.0.1-$GO_TOOLCHAIN.linux-amd64" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  [ -x "$dir/bin/go" ] || [ -f "$dir/bin/go" ] || { echo "deps: the Go module proxy did not serve $GO_TOOLCHAIN" >&2; exit 1; }
  rm -rf /usr/local/lib/kubescale-go
  cp -a "$dir" /usr/local/lib/kubescale-go
  chmod -R u+w /usr/local/lib/kubescale-go
  chmod +x /usr/local/lib/kubescale-go/bin/* /usr/local/lib/kubescale-go/pkg/tool/*/*
  chmod -R u+w "$tmp"; rm -rf "$tmp"
  go_ok /usr/local/lib/kubescale-go/bin/go || { echo "deps: the fetched $GO_TOOLCHAIN does not run" >&2; exit 1; }
fi
