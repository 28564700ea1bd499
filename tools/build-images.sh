#!/usr/bin/env bash
# Container images for the local real node, built without Docker and without a registry: Debian
# packages (debootstrap, apt), npm and PyPI only. Each image is an OCI archive under
# ${RAYKEEPER_CACHE:-~/.cache/raykeeper}/images/, named by a hash of its inputs (its recipe in
# tools/images/, the files it copies, the versions it installs, the keys of the images it builds on),
# so a second run only checks. Prints one line per image, in build order:
#   name=<full image ref> archive=<path>
# ready for `ctr -n k8s.io images import <archive>` (the ref is the archive's image name).
#   tools/build-images.sh [--print] [IMAGE...]   IMAGE: pause node raykeeper redis busybox ray (default: all)
#                                                or rayupgrade (Ray 2.51.0, one KubeRay e2e test; only when named)
#   --print  builds nothing: prints the lines (the archive may not exist yet)
#   --check  builds nothing: exit 0 when every archive exists, 1 otherwise
# Needs root, buildah (vfs storage, chroot isolation: no mounts of its own, no runtime), debootstrap and
# busybox-static: `tools/install-system-deps.sh --images`. Build steps reach deb.debian.org, the npm
# registry and PyPI through the host network (the raykeeper Dockerfile's `npm ci`, pip install ray).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=tools/images/lib.sh
. "$here/images/lib.sh"

print_only=false check=false
want=()
for a in "$@"; do
  case "$a" in
    --print) print_only=true ;;
    --check) check=true ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $a" ;;
    *) want+=("$a") ;;
  esac
done
[ ${#want[@]} -gt 0 ] || want=("${IMAGES_PRINTED[@]}")
for w in "${want[@]}"; do image_known "$w" || die "unknown image '$w' (known: ${IMAGES_ALL[*]})"; done

if $check; then
  for w in "${want[@]}"; do [ -s "$(image_archive "$w")" ] || exit 1; done
  exit 0
fi
if $print_only; then
  for w in "${want[@]}"; do print_line "$w"; done
  exit 0
fi
[ "$(id -u)" -eq 0 ] || die "building images needs root (buildah with vfs storage and chroot isolation, debootstrap)"
for c in buildah debootstrap busybox; do
  command -v "$c" >/dev/null || die "$c is missing: bash tools/install-system-deps.sh --images"
done
mkdir -p "$IMAGES_DIR"
exec 9>"$IMAGES_DIR/.lock"
flock 9 # one build at a time per cache (another helper or CI may call this concurrently)
for w in "${want[@]}"; do ensure_image "$w"; print_line "$w"; done
