#!/usr/bin/env bash
# Builds KubeRay's ray-operator (the operator raykeeper runs beside, see README "Beside KubeRay") from the
# Go module proxy, for test/kuberay/ and the controller benchmark. The version is the one the helper
# module tools/kuberay/go.mod requires (v1.6.2: the newest whose source the proxy serves). The binary lands
# in a cache outside git, keyed by version, and is rebuilt only when missing:
#
#   ${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}/bin/ray-operator-v<version>
#
# Usage: tools/build-kuberay.sh [--print-path | --print-crds | --check]
#   (none)         build if missing, then print the binary's path as the last line of stdout
#   --print-path   print the binary's path and exit (builds nothing)
#   --print-crds   print the directory of KubeRay's CRDs (config/crd/bases in the Go module cache),
#                  downloading the module source if needed (no build)
#   --check        exit 0 when the binary is cached, 1 otherwise (builds nothing)
# Idempotent; safe to run on every CI run (a warm run only checks the file). Progress goes to stderr.
# A cold build takes ~5 minutes on 2 cores and ~1.5 GiB of RAM; the binary is ~64 MB.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mod_dir="$here/kuberay"
module=github.com/ray-project/kuberay/ray-operator
cache="${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}"
bin_dir="$cache/bin"

die() { echo "build-kuberay: ERROR: $*" >&2; exit 1; }
say() { echo "build-kuberay: $*" >&2; }

version="$(awk -v mod="$module" '
  $1 == "require" && $2 == mod { print $3; exit }
  $1 == mod && $2 ~ /^v[0-9]/ { print $2; exit }
' "$mod_dir/go.mod")"
[[ -n "$version" ]] || die "cannot find the version of $module in $mod_dir/go.mod"
out="$bin_dir/ray-operator-$version"

need_go() {
  command -v go >/dev/null 2>&1 || die "go is not on PATH; install Go (see tools/kuberay/go.mod for the minimum version) to $1"
}

case "${1:-}" in
  --print-path)
    echo "$out"
    exit 0
    ;;
  --check)
    [[ -x "$out" ]]
    exit
    ;;
  --print-crds)
    need_go "find KubeRay's CRDs"
    # `go mod download -json` fetches the module source if the cache lacks it and names its directory.
    dir="$(cd "$mod_dir" && go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')"
    [[ -n "$dir" && -d "$dir/config/crd/bases" ]] || die "no config/crd/bases in the module cache for $module@$version"
    echo "$dir/config/crd/bases"
    exit 0
    ;;
  "") ;;
  *) die "unknown argument $1 (usage: $0 [--print-path | --print-crds | --check])" ;;
esac

if [[ -x "$out" ]]; then
  say "cached at $out"
  echo "$out"
  exit 0
fi
need_go "build KubeRay's operator"
mkdir -p "$bin_dir"
# Build into a temporary name and rename: an interrupted build never leaves a truncated binary that a
# later run would take for a cached one.
tmp="$out.tmp.$$"
start=$SECONDS
( while sleep 30; do say "still building ($((SECONDS - start)) s)"; done ) &
ticker=$!
trap "kill $ticker 2>/dev/null; rm -f $(printf %q "$tmp")" EXIT # values, not names: locals are gone when it runs
say "building $module@$version (CGO_ENABLED=0) into $out; this takes several minutes..."
if ! (cd "$mod_dir" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$tmp" "$module" >&2); then
  die "'go build $module' failed in $mod_dir (see the output above)"
fi
kill "$ticker" 2>/dev/null || true
# The operator has no --version flag; --help exits 0 when the binary runs at all.
"$tmp" --help >/dev/null 2>&1 || die "the built binary does not run ($tmp --help failed)"
mv -f "$tmp" "$out"
trap - EXIT
say "built in $((SECONDS - start)) s"
echo "$out"
