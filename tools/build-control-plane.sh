#!/usr/bin/env bash
# Builds the local Kubernetes control plane used by the tests and by `raykeeper dev`: etcd,
# kube-apiserver and kubectl, and with --node the node's commands (kubelet, kube-proxy, kube-scheduler,
# kube-controller-manager) for `raykeeper dev --kubelet` and `npm run test:cluster`. All from the Go
# module proxy (no Docker, no binary downloads). The versions are the ones the helper modules
# tools/etcd/go.mod, tools/kube-apiserver/go.mod and tools/kube-node/go.mod require (kube-node requires
# the same k8s.io/kubernetes version and replace list as kube-apiserver). Binaries land in a cache
# outside git, keyed by version, and are rebuilt only when missing:
#
#   ${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}/bin/etcd-v<version>
#   ${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}/bin/kube-apiserver-v<version>
#   ${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}/bin/kubectl-v<version>
#   ${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}/bin/{kubelet,kube-proxy,kube-scheduler,kube-controller-manager}-v<version>  (--node)
#   ${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}/bin/crictl-v<cri-tools version>  (--node; tools/crictl/go.mod)
#
# Usage: tools/build-control-plane.sh [--node] [--print-paths | --check]
#   --node          also build the node's commands (several more minutes cold)
#   --print-paths   print "<name>=<path>" lines and exit (builds nothing)
#   --check         exit 0 when every binary this call would build is cached, 1 otherwise (builds nothing)
#   --part kube     only the k8s.io/kubernetes commands (kube-apiserver, kubectl, the node's)
#   --part tools    only etcd (and crictl with --node): tools/setup.sh builds the two parts side by side,
#                   so etcd and crictl are off the kube-apiserver's critical path
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

node_version="$(version_of "$here/kube-node/go.mod" k8s.io/kubernetes)"
[[ "$node_version" == "$kube_version" ]] || die "tools/kube-node/go.mod requires k8s.io/kubernetes $node_version but tools/kube-apiserver/go.mod $kube_version: keep them equal"
node_cmds=(kubelet kube-proxy kube-scheduler kube-controller-manager)
crictl_version="$(version_of "$here/crictl/go.mod" sigs.k8s.io/cri-tools)"
crictl_bin="$bin_dir/crictl-$crictl_version"

node=false print=false check=false part=all
usage="usage: $0 [--node] [--part kube|tools] [--print-paths | --check]"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --node) node=true ;;
    --print-paths) print=true ;;
    --check) check=true ;;
    --part) [[ "${2:-}" == kube || "${2:-}" == tools ]] || die "--part takes kube or tools ($usage)"; part="$2"; shift ;;
    *) die "unknown argument $1 ($usage)" ;;
  esac
  shift
done
kube=true tools=true
[[ "$part" == tools ]] && kube=false
[[ "$part" == kube ]] && tools=false
if $check; then
  wanted=()
  if $tools; then wanted+=("$etcd_bin"); if $node; then wanted+=("$crictl_bin"); fi; fi
  if $kube; then
    wanted+=("$kube_bin" "$bin_dir/kubectl-$kube_version")
    if $node; then for c in "${node_cmds[@]}"; do wanted+=("$bin_dir/$c-$kube_version"); done; fi
  fi
  for f in "${wanted[@]}"; do [[ -x "$f" ]] || exit 1; done
  exit 0
fi
if $print; then
  echo "etcd=$etcd_bin"
  echo "kube-apiserver=$kube_bin"
  echo "kubectl=$bin_dir/kubectl-$kube_version"
  for c in "${node_cmds[@]}"; do echo "$c=$bin_dir/$c-$kube_version"; done
  echo "crictl=$crictl_bin"
  exit 0
fi

# -s -w: no symbol table or DWARF (nobody debugs these here), a shorter link on 2 cores.
if $tools; then
  build etcd "$here/etcd" go.etcd.io/etcd/server/v3 "$etcd_bin" "-s -w"
  say "ready: $etcd_bin"
  if $node; then
    # crictl stops and removes the node's pods through the CRI when the node stops (netns, IPs, mounts).
    build crictl "$here/crictl" sigs.k8s.io/cri-tools/cmd/crictl "$crictl_bin" "-s -w" --help
    say "ready: $crictl_bin"
  fi
fi
$kube || exit 0
# Stamp the version (as Kubernetes' own build does) so /version and `kubectl version` report it instead
# of v0.0.0-master.
kube_minor="${kube_version#v*.}"; kube_minor="${kube_minor%%.*}"
kube_major="${kube_version#v}"; kube_major="${kube_major%%.*}"
vpkg=k8s.io/component-base/version
kube_ldflags="-s -w -X $vpkg.gitVersion=$kube_version -X $vpkg.gitMajor=$kube_major -X $vpkg.gitMinor=$kube_minor -X $vpkg.gitTreeState=clean"
build kube-apiserver "$here/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver "$kube_bin" "$kube_ldflags"
say "ready: $kube_bin"
# kubectl (the tests and `raykeeper dev` users call it; a fresh Debian machine has none) and, with --node,
# the node's commands: one go build of the kube-node module.
set_specs=("kubectl|k8s.io/kubernetes/cmd/kubectl|$bin_dir/kubectl-$kube_version|version --client")
if $node; then
  for c in "${node_cmds[@]}"; do set_specs+=("$c|k8s.io/kubernetes/cmd/$c|$bin_dir/$c-$kube_version|--version"); done
fi
build_set "$here/kube-node" "$kube_ldflags" "${set_specs[@]}"
say "ready: $bin_dir/kubectl-$kube_version"
if $node; then
  for c in "${node_cmds[@]}"; do say "ready: $bin_dir/$c-$kube_version"; done
fi
