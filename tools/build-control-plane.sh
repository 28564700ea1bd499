#!/usr/bin/env bash
# Builds the local Kubernetes control plane used by the tests and by `raykeeper dev`: etcd and
# kube-apiserver, from the Go module proxy (no Docker, no binary downloads). The versions are the ones
# the helper modules tools/etcd/go.mod and tools/kube-apiserver/go.mod require. Binaries land in a cache
# outside git, keyed by version, and are rebuilt only when missing:
#
#   ${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}/bin/etcd-v<version>
#   ${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}/bin/kube-apiserver-v<version>
#
# Usage: tools/build-control-plane.sh [--print-paths]
#   --print-paths   print "etcd=<path>" and "kube-apiserver=<path>" and exit (builds nothing)
# Idempotent; safe to run on every CI run (a warm run only checks the two files).
# A cold kube-apiserver build takes several minutes and ~2 GiB of RAM.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tool=build-control-plane
# shellcheck source=lib/go-build.sh
source "$here/lib/go-build.sh"

etcd_version="$(version_of "$here/etcd/go.mod" go.etcd.io/etcd/server/v3)"
kube_version="$(version_of "$here/kube-apiserver/go.mod" k8s.io/kubernetes)"
etcd_bin="$bin_dir/etcd-$etcd_version"
kube_bin="$bin_dir/kube-apiserver-$kube_version"

if [[ "${1:-}" == "--print-paths" ]]; then
  echo "etcd=$etcd_bin"
  echo "kube-apiserver=$kube_bin"
  exit 0
elif [[ $# -gt 0 ]]; then
  die "unknown argument $1 (usage: $0 [--print-paths])"
fi

build etcd "$here/etcd" go.etcd.io/etcd/server/v3 "$etcd_bin"
# Stamp the version (as Kubernetes' own build does) so /version and `kubectl version` report it instead
# of v0.0.0-master.
kube_minor="${kube_version#v*.}"; kube_minor="${kube_minor%%.*}"
kube_major="${kube_version#v}"; kube_major="${kube_major%%.*}"
vpkg=k8s.io/component-base/version
build kube-apiserver "$here/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver "$kube_bin" \
  "-X $vpkg.gitVersion=$kube_version -X $vpkg.gitMajor=$kube_major -X $vpkg.gitMinor=$kube_minor -X $vpkg.gitTreeState=clean"
say "ready: $etcd_bin"
say "ready: $kube_bin"
