#!/usr/bin/env bash
# Everything a fresh machine needs before `npm start` or `npm test`: Debian packages (Redis),
# npm packages (incl. the pinned Node 22), and the locally built etcd, kube-apiserver and kubectl.
# With --node, also the real node's packages (containerd, runc, CNI plugins, dnsmasq, buildah) and
# commands (kubelet, kube-proxy, kube-scheduler, kube-controller-manager), for `raykeeper dev --kubelet`
# and `npm run test:cluster`.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
args=()
for arg in "$@"; do
  case "$arg" in
    --node) args+=(--node) ;;
    *) echo "setup: unknown argument $arg (usage: $0 [--node])" >&2; exit 2 ;;
  esac
done
bash tools/install-system-deps.sh "${args[@]}"
if [ ! -x node_modules/.bin/node ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
bash tools/build-control-plane.sh "${args[@]}"
