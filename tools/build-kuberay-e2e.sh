#!/usr/bin/env bash
# Builds KubeRay's own end-to-end suites for `npm run test:kuberay` (test/kuberay-e2e/): `go test -c` of
# the packages test/e2e, test/e2erayjob and test/e2eraycronjob (helpers in test/support) of the Go module
# github.com/ray-project/kuberay/ray-operator at the version tools/kuberay-e2e/go.mod requires (the one
# tools/kuberay/go.mod builds the operator from: v1.6.2). Nothing of KubeRay's is edited: the binaries
# are its tests as published. Beside them:
#   tests.jsonl  every leaf test of the three packages, as `go test -json` names it, read from their
#                source by tools/kuberay-e2e/listtests (go/ast) and checked against the binaries' -test.list
#   test2json    Go's cmd/test2json, so running the suites needs no Go toolchain
# Everything lands in a cache outside git, keyed by the version and this script's inputs, and is
# rebuilt only when missing:
#
#   ${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}/bin/kuberay-e2e-<version>-<key>/
#
# Usage: tools/build-kuberay-e2e.sh [--print-dir | --check]
#   (none)        build if missing, then print the directory as the last line of stdout
#   --print-dir   print the directory and exit (builds nothing)
#   --check       exit 0 when it is built, 1 otherwise (builds nothing)
# go.sum is committed: tools/kuberay-e2e/tools.go imports what the suites' test files import from their
# module, so `go mod tidy` there records every module `go test -c` needs.
# Idempotent. Progress goes to stderr. After tools/build-kuberay.sh (same module, warm Go build cache)
# a build takes ~1-2 minutes on 2 cores; cold, about as long as the operator's (~5 minutes).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mod_dir="$here/kuberay-e2e"
module=github.com/ray-project/kuberay/ray-operator
packages=(test/e2e test/e2erayjob test/e2eraycronjob)
cache="${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}"

die() { echo "build-kuberay-e2e: ERROR: $*" >&2; exit 1; }
say() { echo "build-kuberay-e2e: $*" >&2; }

require_of() {
  awk -v mod="$module" '
    $1 == "require" && $2 == mod { print $3; exit }
    $1 == mod && $2 ~ /^v[0-9]/ { print $2; exit }
  ' "$1"
}
version="$(require_of "$mod_dir/go.mod")"
[[ -n "$version" ]] || die "cannot find the version of $module in $mod_dir/go.mod"
operator_version="$(require_of "$here/kuberay/go.mod")"
[[ "$version" == "$operator_version" ]] ||
  die "tools/kuberay-e2e/go.mod requires $module $version but tools/kuberay/go.mod builds the operator from $operator_version: make them the same"
# The key: this script, the helper module (go.mod, go.sum, the lister) and the Go version.
key="$( { cat "${BASH_SOURCE[0]}"; find "$mod_dir" -type f | LC_ALL=C sort | xargs cat; go version 2>/dev/null || true; } | sha256sum | cut -c1-12)"
out="$cache/bin/kuberay-e2e-$version-$key"

case "${1:-}" in
  --print-dir) echo "$out"; exit 0 ;;
  --check) [[ -s "$out/tests.jsonl" ]]; exit ;;
  "") ;;
  *) die "unknown argument $1 (usage: $0 [--print-dir | --check])" ;;
esac

if [[ -s "$out/tests.jsonl" ]]; then
  say "cached at $out"
  echo "$out"
  exit 0
fi
command -v go >/dev/null 2>&1 || die "go is not on PATH; install Go (see tools/kuberay-e2e/go.mod for the minimum version)"
mkdir -p "$cache/bin"
# Build into a temporary directory and rename it: an interrupted build never leaves a partial one that
# a later run would take for a cached one.
tmp="$out.tmp.$$"
start=$SECONDS
( while sleep 30; do say "still building ($((SECONDS - start)) s)"; done ) &
ticker=$!
trap "kill $ticker 2>/dev/null; rm -rf $(printf %q "$tmp")" EXIT # values, not names: locals are gone when it runs
mkdir -p "$tmp"
cd "$mod_dir"
say "go test -c $module@$version: ${packages[*]} into $out; this takes a few minutes..."
for p in "${packages[@]}"; do
  CGO_ENABLED=0 go test -c -trimpath -ldflags="-s -w" -o "$tmp/$(basename "$p").test" "$module/$p" >&2 ||
    die "'go test -c $module/$p' failed in $mod_dir (see the output above)"
done
CGO_ENABLED=0 go build -trimpath -o "$tmp/test2json" cmd/test2json >&2 || die "go build cmd/test2json failed"
src="$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')"
[[ -n "$src" && -d "$src/test" ]] || die "no source directory for $module@$version in the module cache"
go run ./listtests "$src" "$module" "${packages[@]}" >"$tmp/tests.jsonl" || die "listing the suites' tests failed"
# The lister read the source; the binaries say which top-level tests they hold: both must agree.
for p in "${packages[@]}"; do
  b="$(basename "$p").test"
  listed="$("$tmp/$b" -test.list '.*' | grep '^Test' | LC_ALL=C sort)"
  read_="$(sed -n "s/.*\"binary\":\"$b\",\"test\":\"\([^\"/]*\).*/\1/p" "$tmp/tests.jsonl" | LC_ALL=C sort -u)"
  [[ -n "$listed" && "$listed" == "$read_" ]] ||
    die "$b: the binary lists [$(echo $listed)] but the source lister found [$(echo $read_)]"
done
kill "$ticker" 2>/dev/null || true
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
# Keep the 3 newest builds: checkouts with other sources that share the cache keep theirs, and a run
# reading an older one is not pulled from under it.
ls -dt "$cache/bin/kuberay-e2e-"*/ 2>/dev/null | grep -v '\.tmp\.' | tail -n +4 | xargs -r rm -rf
say "built in $((SECONDS - start)) s: $(wc -l <"$out/tests.jsonl") tests in ${#packages[@]} packages"
echo "$out"
