#!/usr/bin/env bash
# Everything a fresh machine needs before `npm start` or `npm test`: Debian packages (Redis),
# npm packages (incl. the pinned Node 22), and the locally built etcd, kube-apiserver and kubectl,
# helm 3/4 (chart tests) and KubeRay's operator (test/kuberay), all cached by version.
# Idempotent: a second run only checks.
#   --images  also the container images of the local real node (tools/build-images.sh: buildah,
#             debootstrap; needs root; ~9 min cold, seconds warm); test/images runs them
#   --node    also the real node's packages (containerd, runc, CNI plugins, dnsmasq) and commands
#             (kubelet, kube-proxy, kube-scheduler, kube-controller-manager, crictl; ~10 min cold), for
#             `raykeeper dev --kubelet` and `npm run test:cluster`; implies --images
set -euo pipefail
cd "$(dirname "$0")/.."
images=false node=false
for arg in "$@"; do
  case "$arg" in
    --images) images=true ;;
    --node) node=true images=true ;;
    *) echo "setup: unknown argument $arg (usage: $0 [--images] [--node])" >&2; exit 2 ;;
  esac
done
deps=(); build=()
if $images; then deps+=(--images); fi
if $node; then deps+=(--node); build+=(--node); fi
bash tools/install-system-deps.sh "${deps[@]}"
if [ ! -x node_modules/.bin/node ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
bash tools/build-control-plane.sh "${build[@]}"
bash tools/build-helm.sh
bash tools/build-kuberay.sh >/dev/null
if $images; then bash tools/build-images.sh; fi
