# Shared by the tools/build-*.sh scripts (sourced, not run): building a Go binary from a helper module
# (tools/<name>/go.mod) into the version-keyed cache ${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}/bin.
# The sourcing script sets `tool` (the prefix of its messages) before sourcing.

cache="${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}"
bin_dir="$cache/bin"

die() { echo "${tool:-build}: ERROR: $*" >&2; exit 1; }
say() { echo "${tool:-build}: $*"; }

# version_of <go.mod> <module path>: the version a helper module requires.
version_of() {
  local v
  v="$(awk -v mod="$2" '
    $1 == "require" && $2 == mod { print $3; exit }
    $1 == mod && $2 ~ /^v[0-9]/ { print $2; exit }
  ' "$1")"
  [[ -n "$v" ]] || die "cannot find the version of $2 in $1"
  echo "$v"
}

# build <name> <helper module dir> <package> <output> [ldflags] [version flag]
# Does nothing when <output> exists. The built binary must run with [version flag] (default --version).
build() {
  local name="$1" dir="$2" pkg="$3" out="$4" ldflags="${5:-}" version_flag="${6:---version}"
  if [[ -x "$out" ]]; then
    say "$name: cached at $out"
    return 0
  fi
  command -v go >/dev/null 2>&1 || die "go is not on PATH; install Go (see tools/*/go.mod for the minimum version) to build $name"
  mkdir -p "$bin_dir"
  # Build into a temporary name next to the target and rename: an interrupted build never leaves a
  # truncated binary that a later run would take for a cached one.
  local tmp="$out.tmp.$$"
  local start=$SECONDS
  # A heartbeat while `go build` is silent for minutes (CI logs, impatient humans).
  ( while sleep 30; do say "$name: still building ($((SECONDS - start)) s)"; done ) &
  local ticker=$!
  trap "kill $ticker 2>/dev/null; rm -f $(printf %q "$tmp")" EXIT # values, not names: locals are gone when it runs
  say "$name: building $pkg (CGO_ENABLED=0) into $out; this can take several minutes..."
  if ! (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$tmp" "$pkg"); then
    kill "$ticker" 2>/dev/null || true
    rm -f "$tmp"
    die "$name: 'go build $pkg' failed in $dir (see the output above)"
  fi
  kill "$ticker" 2>/dev/null || true
  "$tmp" $version_flag >/dev/null 2>&1 || { rm -f "$tmp"; die "$name: the built binary does not run ($tmp $version_flag failed)"; }
  mv -f "$tmp" "$out"
  trap - EXIT
  say "$name: built in $((SECONDS - start)) s"
}

# build_set <helper module dir> <ldflags> <name>|<package>|<output>|<version flag> ...
# Like build, for several commands of one module: the missing ones are built by one `go build` (one
# action graph: shared packages compiled once, the links run side by side), then checked and renamed.
build_set() {
  local dir="$1" ldflags="$2" spec name pkg out vflag
  shift 2
  local names=() pkgs=() outs=() vflags=()
  for spec in "$@"; do
    IFS='|' read -r name pkg out vflag <<<"$spec"
    if [[ -x "$out" ]]; then say "$name: cached at $out"; continue; fi
    names+=("$name"); pkgs+=("$pkg"); outs+=("$out"); vflags+=("${vflag:---version}")
  done
  [[ ${#names[@]} -gt 0 ]] || return 0
  command -v go >/dev/null 2>&1 || die "go is not on PATH; install Go (see tools/*/go.mod for the minimum version) to build ${names[*]}"
  mkdir -p "$bin_dir"
  local tmp start=$SECONDS i
  tmp="$(mktemp -d "$bin_dir/.build.XXXXXX")"
  ( while sleep 30; do say "${names[*]}: still building ($((SECONDS - start)) s)"; done ) &
  local ticker=$!
  trap "kill $ticker 2>/dev/null; rm -rf $(printf %q "$tmp")" EXIT
  say "${names[*]}: building ${pkgs[*]} (CGO_ENABLED=0, one go build) into $bin_dir; this can take several minutes..."
  if ! (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$tmp/" "${pkgs[@]}"); then
    kill "$ticker" 2>/dev/null || true; rm -rf "$tmp"
    die "${names[*]}: 'go build ${pkgs[*]}' failed in $dir (see the output above)"
  fi
  kill "$ticker" 2>/dev/null || true
  for i in "${!names[@]}"; do
    local built="$tmp/$(basename "${pkgs[$i]}")"
    # shellcheck disable=SC2086 # the version flag may be two words ("version --client")
    "$built" ${vflags[$i]} >/dev/null 2>&1 || { rm -rf "$tmp"; die "${names[$i]}: the built binary does not run ($built ${vflags[$i]} failed)"; }
  done
  for i in "${!names[@]}"; do mv -f "$tmp/$(basename "${pkgs[$i]}")" "${outs[$i]}"; done
  rm -rf "$tmp"
  trap - EXIT
  say "${names[*]}: built in $((SECONDS - start)) s"
}
