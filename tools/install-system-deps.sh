#!/usr/bin/env bash
# Debian packages the tests and `raykeeper dev` need: redis-server (real Redis, TLS-capable, with
# redis-sentinel) and redis-tools (redis-cli, used by the benchmark's baseline). Idempotent.
#   --images  also what tools/build-images.sh needs: buildah, debootstrap (+ Debian's keyring),
#             busybox-static, ca-certificates, runc (test/images runs the images with it)
set -euo pipefail
need=()
for a in "$@"; do
  case "$a" in
    --images)
      command -v buildah >/dev/null || need+=(buildah)
      command -v debootstrap >/dev/null || need+=(debootstrap)
      [ -s /usr/share/keyrings/debian-archive-keyring.gpg ] || need+=(debian-archive-keyring)
      dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
      command -v runc >/dev/null || need+=(runc) # test/images runs the images with it
      [ -s /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
      ;;
    *) echo "install-system-deps: unknown option $a" >&2; exit 2 ;;
  esac
done
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-cli >/dev/null || need+=(redis-tools)
command -v redis-sentinel >/dev/null || need+=(redis-sentinel)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
  # The package starts a system redis on 6379; tests start their own on free ports.
  $SUDO systemctl disable --now redis-server >/dev/null 2>&1 || true
fi
redis-server --version
