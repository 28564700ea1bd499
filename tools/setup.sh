#!/usr/bin/env bash
# Everything a fresh machine needs before `npm start` or `npm test`: Debian packages (Redis),
# npm packages (incl. the pinned Node 22), and the locally built etcd + kube-apiserver, helm 3/4 (chart
# tests) and KubeRay's operator (test/kuberay), all cached by version.
# Idempotent: a second run only checks.
#   --images  also the container images of the local real node (tools/build-images.sh: buildah,
#             debootstrap; needs root; ~9 min cold, seconds warm)
set -euo pipefail
cd "$(dirname "$0")/.."
images=false
for a in "$@"; do
  case "$a" in
    --images) images=true ;;
    *) echo "setup: unknown option $a" >&2; exit 2 ;;
  esac
done
if $images; then bash tools/install-system-deps.sh --images; else bash tools/install-system-deps.sh; fi
if [ ! -x node_modules/.bin/node ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
bash tools/build-control-plane.sh
bash tools/build-helm.sh
bash tools/build-kuberay.sh >/dev/null
if $images; then bash tools/build-images.sh; fi
