#!/usr/bin/env bash
# Build the lab's Kubernetes control plane from Go modules only (lab/k8s/go.mod pins one release):
# kubeadm, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, the etcd server kubeadm pins for the release,
# kwok (and its node and pod stage files), and the lab's own kubelet-config-check and slowdisk (bench/etcd_disk.py's emulated network disk). The binaries go
# to a cache outside the checkout, keyed by what decides them (go.mod, go.sum, the lab's Go sources, this script), so
# a second build takes no time.
# Prints the directory holding bin/ and stages/ on its last line.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
export PATH="/usr/local/go/bin:/usr/local/lib/kubescale-go/bin:$PATH"
export CGO_ENABLED=0 GOFLAGS=-mod=mod

if ! command -v go >/dev/null 2>&1; then
  echo "lab/k8s: no Go toolchain (looked on PATH and in /usr/local/go/bin); run scripts/deps.sh, which installs one" >&2
  exit 1
fi
# A Go of 1.21 or newer fetches the go line's toolchain through the module proxy by itself (GOTOOLCHAIN=auto).
gover="$(go env GOVERSION)"
case "$gover" in
  go1.[0-9]|go1.[0-9].*|go1.1[0-9]|go1.1[0-9].*|go1.20|go1.20.*)
    echo "lab/k8s: $gover is too old to build Kubernetes (it needs go1.21 or newer to fetch the go1.26 toolchain); run scripts/deps.sh" >&2
    exit 1;;
esac

k8s_version="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' go.mod)"
key="$(find cmd -name '*.go' -print0 | sort -z | xargs -0 cat go.mod go.sum build.sh | sha256sum | cut -c1-16)"
cache="${KUBESCALE_K8S_CACHE:-/var/cache/kubescale/k8s}/$k8s_version-$key"
bins=(kubeadm etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kubelet-config-check slowdisk)
root="$(dirname "$cache")"
mkdir -p "$root"
# `current` names the newest build (relative, so it resolves where the nodes mount the cache, lab/nodes.py). Callers
# run this script side by side (the test streams, a benchmark's threads): each links under a name of its own, and
# only when `current` names another build.
link_current() {
  [ "$(readlink "$root/current" 2>/dev/null)" = "$(basename "$cache")" ] && return 0
  ln -sfn "$(basename "$cache")" "$root/current.tmp.$$" && mv -T "$root/current.tmp.$$" "$root/current"
}
if [ -f "$cache/.complete" ]; then
  link_current
  echo "$cache"
  exit 0
fi
# One build at a time; whoever waited finds it done.
exec 9>"$root/.build.lock"
flock 9
if [ -f "$cache/.complete" ]; then
  link_current
  echo "$cache"
  exit 0
fi

echo "lab/k8s: building Kubernetes $k8s_version and kwok into $cache (cold: about 7 minutes on 2 cores, seconds with a warm Go build cache)" >&2
if ! go mod download 2>/tmp/kubescale-k8s-download.err; then
  echo "lab/k8s: fetching the Go modules failed (the module proxy is the only source): $(tail -3 /tmp/kubescale-k8s-download.err)" >&2
  exit 1
fi
rm -rf "$cache.tmp"
mkdir -p "$cache.tmp/bin" "$cache.tmp/stages"
minor="${k8s_version#v1.}"; minor="${minor%%.*}"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  ldflags+=" -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
go build -trimpath -ldflags "$ldflags" -o "$cache.tmp/bin/" \
  k8s.io/kubernetes/cmd/kubeadm ./cmd/etcd k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl \
  sigs.k8s.io/kwok/cmd/kwok ./cmd/kubelet-config-check ./cmd/slowdisk
for b in "${bins[@]}"; do
  [ -x "$cache.tmp/bin/$b" ] || { echo "lab/k8s: $b was not built" >&2; exit 1; }
done
# kwok's own stage files, from the module as the proxy served it: nodes turn Ready and keep a lease, pods run.
kwok_dir="$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
for s in node/fast node/heartbeat-with-lease pod/fast; do
  for f in "$kwok_dir/kustomize/stage/$s"/*.yaml; do
    [ "$(basename "$f")" = kustomization.yaml ] && continue
    install -m 0644 "$f" "$cache.tmp/stages/$(basename "$f")"
  done
done
touch "$cache.tmp/.complete"
rm -rf "$cache"
mv "$cache.tmp" "$cache"
link_current
# Older builds (another go.sum or script): ~450 MB each, not kept.
for old in "$root"/v*; do
  [ "$old" = "$cache" ] || rm -rf "$old"
done
echo "$cache"
