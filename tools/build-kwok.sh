#!/usr/bin/env bash
# Builds kwok (simulated nodes: it marks fake Nodes Ready and moves their pods through a kubelet's
# states, no container runs) for the kwok test (test/scale/) and `npm run bench -- scale`, from the Go
# module proxy (no binary downloads). The version is the one the helper module tools/kwok/go.mod
# requires. The binary lands in the cache outside git, keyed by version, and is rebuilt only when missing:
#
#   ${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}/bin/kwok-v<version>
#
# Usage: tools/build-kwok.sh [--print-paths | --check]
#   --print-paths   print "kwok=<path>" and exit (builds nothing)
#   --check         exit 0 when it is cached, 1 otherwise (builds nothing)
# Idempotent; safe to run on every CI run (a warm run only checks the file). A cold build takes a few
# minutes on 2 cores (module download included).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tool=build-kwok
# shellcheck source=lib/go-build.sh
source "$here/lib/go-build.sh"

kwok_version="$(version_of "$here/kwok/go.mod" sigs.k8s.io/kwok)"
kwok_bin="$bin_dir/kwok-$kwok_version"

if [[ "${1:-}" == "--print-paths" ]]; then
  echo "kwok=$kwok_bin"
  exit 0
elif [[ "${1:-}" == "--check" ]]; then
  [[ -x "$kwok_bin" ]]
  exit
elif [[ $# -gt 0 ]]; then
  die "unknown argument $1 (usage: $0 [--print-paths | --check])"
fi

build kwok "$here/kwok" sigs.k8s.io/kwok/cmd/kwok "$kwok_bin" "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_version#v}" --version
say "ready: $kwok_bin"
