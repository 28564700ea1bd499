#!/usr/bin/env bash
# Everything a fresh machine needs before `npm start` or `npm test`: Debian packages (Redis),
# npm packages (incl. the pinned Node 22), the locally built etcd, kube-apiserver and kubectl,
# helm 3/4 (chart tests), KubeRay's operator (test/kuberay) and its e2e suites (npm run test:kuberay),
# kwok (test/scale) and Ray (a venv: RayJobs in `raykeeper dev` and the real-Ray tests), all cached by
# version. Idempotent: a second run only checks (seconds).
#   --images  also the container images of the local real node (tools/build-images.sh: buildah,
#             debootstrap; needs root); test/images runs them
#   --node    also the real node's packages (containerd, runc, CNI plugins, dnsmasq) and commands
#             (kubelet, kube-proxy, kube-scheduler, kube-controller-manager, crictl), for
#             `raykeeper dev --kubelet` and `npm run test:cluster`; implies --images
#   --no-ray  no Ray (only the webhook and the controller: RayJobs then stay Initializing in dev, and
#             the tests that need Ray fail, naming this script)
# Steps run side by side where they can (the Go builds, the images, Ray; about 2.5 GB of memory in use at
# peak, the three Go builds together); one line per step start and
# end (cached or cold), a line every 30 s naming what still runs, a table of step times at the end.
# Each step's output is in .raykeeper/setup/<step>.log; a failed step prints the end of its log.
set -euo pipefail
cd "$(dirname "$0")/.."
images=false node=false ray=true
for arg in "$@"; do
  case "$arg" in
    --images) images=true ;;
    --node) node=true images=true ;;
    --no-ray) ray=false ;;
    *) echo "setup: unknown argument $arg (usage: $0 [--images] [--node] [--no-ray])" >&2; exit 2 ;;
  esac
done
# shellcheck source=lib/steps.sh
source tools/lib/steps.sh
steps_init "${RAYKEEPER_SETUP_LOGS:-.raykeeper/setup}"

deps=(); build=()
if $images; then deps+=(--images); fi
if $node; then deps+=(--node); build+=(--node); fi
if $ray; then deps+=(--ray); fi
state() { if "$@" >/dev/null 2>&1; then echo cached; else echo cold; fi; }
npm_fresh() { [ -x node_modules/.bin/node ] && [ ! package-lock.json -nt node_modules/.package-lock.json ]; }
npm_step() { if npm_fresh; then echo "node_modules up to date"; else npm ci --no-audit --no-fund; fi; }
export -f npm_fresh npm_step

step system "$(state bash tools/install-system-deps.sh "${deps[@]}" --check)" "Debian packages (redis-server, prometheus$($images && echo ', buildah, debootstrap')$($node && echo ', containerd, runc, CNI, dnsmasq'))" \
  -- bash tools/install-system-deps.sh "${deps[@]}"
step npm "$(state npm_fresh)" "npm ci (node@22, fastify, @kubernetes/client-node, tap, ...)" -- bash -c npm_step
# The kube-apiserver build is the longest (10+ minutes cold): etcd and crictl build beside it, not before.
step kubernetes "$(state bash tools/build-control-plane.sh "${build[@]}" --part kube --check)" "go build kube-apiserver, kubectl$($node && echo ', kubelet, kube-proxy, kube-scheduler, kube-controller-manager')" \
  -- bash tools/build-control-plane.sh "${build[@]}" --part kube
step etcd "$(state bash tools/build-control-plane.sh "${build[@]}" --part tools --check)" "go build etcd$($node && echo ', crictl')" \
  -- bash tools/build-control-plane.sh "${build[@]}" --part tools
step helm "$(state bash tools/build-helm.sh --check)" "go build helm 3 and helm 4 (chart tests)" -- bash tools/build-helm.sh
step kuberay "$(state bash tools/build-kuberay.sh --check)" "go build KubeRay's ray-operator v1.6.2 (tests beside KubeRay)" -- bash tools/build-kuberay.sh
# KubeRay's own e2e suites, from the same module: after the operator, whose packages they share in the Go
# build cache (a minute or two then, instead of a cold build beside it).
step kuberay-e2e "$(state bash tools/build-kuberay-e2e.sh --check)" "go test -c KubeRay's e2e suites v1.6.2 (npm run test:kuberay, its CI subset in test:cluster)" \
  --after kuberay -- bash tools/build-kuberay-e2e.sh
step kwok "$(state bash tools/build-kwok.sh --check)" "go build kwok (simulated nodes: test/scale, npm run bench -- scale)" -- bash tools/build-kwok.sh
if $ray; then
  step ray "$(state bash tools/install-ray.sh --check)" "Ray from PyPI into a venv (tools/install-ray.sh)" --after system -- bash tools/install-ray.sh
fi
if $images; then
  # After the Debian packages (buildah, debootstrap); side by side with the Go builds, which are CPU-bound
  # while the image builds mostly wait on apt, npm and PyPI.
  step images "$(state bash tools/build-images.sh --check)" "container images of the real node (tools/build-images.sh)" --after system -- bash tools/build-images.sh
fi

ok=true
steps_run || ok=false
echo
steps_summary
if ! $ok; then
  echo "setup: FAILED (see the step lines above and their logs)" >&2
  exit 1
fi
