#!/usr/bin/env bash
# Everything a fresh machine needs before `npm start` or `npm test`: Debian packages (Redis),
# npm packages (incl. the pinned Node 22), and the locally built etcd + kube-apiserver, helm 3/4 (chart
# tests) and KubeRay's operator (test/kuberay), all cached by version.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-system-deps.sh
if [ ! -x node_modules/.bin/node ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
bash tools/build-control-plane.sh
bash tools/build-helm.sh
bash tools/build-kuberay.sh >/dev/null
