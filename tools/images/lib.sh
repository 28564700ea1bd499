# Shared by tools/build-images.sh: the image table, content keys, buildah in its own vfs storage.
# Each image is a recipe tools/images/<name>.sh defining <name>_ref, <name>_deps (images it builds on),
# <name>_inputs (prints what else its content depends on: versions, file hashes) and <name>_build
# (builds it into buildah's storage and exports it). Its key hashes IMAGES_FORMAT, its ref, the recipe
# file, the inputs and the keys of its deps; bump IMAGES_FORMAT when a change here alters every image.
IMAGES_FORMAT=1
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}"
IMAGES_DIR="$CACHE/images"
# Build order; `debian` is the shared base the others start from (built, not printed).
# rayupgrade (another Ray release, for one KubeRay e2e test) is built only when named.
IMAGES_ALL=(pause debian node raykeeper redis busybox ray rayupgrade)
IMAGES_PRINTED=(pause node raykeeper redis busybox ray)
export BUILDAH_ISOLATION=chroot # no runtime, no user namespaces; RUN steps use the host network
export STORAGE_DRIVER=vfs       # plain copies: no overlay mounts

die() { echo "build-images: $*" >&2; exit 1; }
log() { echo "build-images: $*" >&2; }
image_known() { local n; for n in "${IMAGES_ALL[@]}"; do [ "$n" = "$1" ] && return 0; done; return 1; }
bah() { buildah --root "$IMAGES_DIR/storage" --runroot "$IMAGES_DIR/run" --storage-driver vfs "$@"; }
sha() { sha256sum | cut -c1-64; }
# Content hash of files (paths relative to the repository root), names included.
hash_files() { (cd "$REPO_ROOT" && find "$@" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha; }

# The CA bundle the host's npm/pip trust (it includes a TLS-intercepting proxy's CA where there is
# one); build steps that reach a registry get it bind-mounted, images never keep it.
host_ca_bundle() {
  local f
  for f in "${NODE_EXTRA_CA_CERTS:-}" "${SSL_CERT_FILE:-}" /etc/ssl/certs/ca-certificates.crt; do
    [ -n "$f" ] && [ -s "$f" ] && { echo "$f"; return 0; }
  done
  die "no CA bundle on the host (install ca-certificates)"
}

# Debian's busybox-static (the images that carry it have no libc).
static_busybox() {
  local b=/bin/busybox
  [ -x "$b" ] && ! ldd "$b" >/dev/null 2>&1 || die "no static $b: bash tools/install-system-deps.sh --images (busybox-static)"
  echo "$b"
}

for _recipe in "$REPO_ROOT"/tools/images/[a-z]*.sh; do
  [ "$(basename "$_recipe")" = lib.sh ] || . "$_recipe"
done
unset _recipe

declare -A _KEY=()
image_key() {
  local n="$1" d deps
  if [ -z "${_KEY[$n]:-}" ]; then
    deps=""
    for d in $("${n}_deps"); do deps+="$d=$(image_key "$d") "; done
    _KEY[$n]="$({ echo "format=$IMAGES_FORMAT ref=$("${n}_ref") deps=$deps"; cat "$REPO_ROOT/tools/images/$n.sh"; "${n}_inputs"; } | sha)"
  fi
  echo "${_KEY[$n]}"
}
image_archive() { echo "$IMAGES_DIR/$1-$(image_key "$1" | cut -c1-16).oci.tar"; }
print_line() { echo "name=$("${1}_ref") archive=$(image_archive "$1")"; }

# The image with this key, in buildah's storage under its ref (loaded from its archive if needed).
load_image() {
  local n="$1" ref have
  ref="$("${n}_ref")"
  have="$(bah inspect --type image --format '{{index .OCIv1.Config.Labels "io.raykeeper.images.key"}}' "$ref" 2>/dev/null || true)"
  [ "$have" = "$(image_key "$n")" ] && return 0
  bah rmi -f "$ref" >/dev/null 2>&1 || true
  bah pull --quiet "oci-archive:$(image_archive "$n")" >/dev/null
  bah tag "$(bah images --noheading --format '{{.ID}}' --filter "label=io.raykeeper.images.key=$(image_key "$n")" | head -1)" "$ref"
}

# Commits container $1 as image $2 (labelled with its key), then exports it.
commit_image() {
  local c="$1" n="$2"
  bah config --label "io.raykeeper.images.key=$(image_key "$n")" "$c"
  bah commit --quiet --rm "$c" "$("${n}_ref")" >/dev/null
  export_image "$n"
}

# Writes the archive of image $1 from buildah's storage, atomically (a crash leaves no archive).
export_image() {
  local n="$1" ref archive start=$SECONDS
  ref="$("${n}_ref")"; archive="$(image_archive "$n")"
  bah rmi --prune >/dev/null 2>&1 || true # earlier images of this ref, now untagged
  rm -f "$archive.tmp"
  bah push --quiet "$ref" "oci-archive:$archive.tmp:$ref" >/dev/null
  mv "$archive.tmp" "$archive"
  # Keep the 3 newest archives of this image: checkouts with other sources (worktrees, branches) that
  # share the cache keep theirs, and an import reading an older one is not pulled from under it.
  ls -t "$IMAGES_DIR/$n"-*.oci.tar | tail -n +4 | xargs -r rm -f
  log "$n: exported in $((SECONDS - start))s: $(du -h "$archive" | cut -f1) archive, $(bah images --noheading --format '{{.Size}}' "$ref") unpacked"
}

ensure_image() {
  local n="$1" d start=$SECONDS
  [ -s "$(image_archive "$n")" ] && return 0
  for d in $("${n}_deps"); do ensure_image "$d"; load_image "$d"; done
  bah rm --all >/dev/null 2>&1 || true # working containers a failed build left behind
  log "$n: building $("${n}_ref") (key $(image_key "$n" | cut -c1-16))"
  "${n}_build"
  log "$n: built in $((SECONDS - start))s"
}
