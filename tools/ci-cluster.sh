#!/usr/bin/env bash
# The real-node suite for CI (`.ci/run` calls it after the default suite): root, then
#   tools/setup.sh --node          containerd, runc, CNI plugins, dnsmasq, buildah, debootstrap, ...;
#                                  kubelet, kube-proxy, kube-scheduler, kube-controller-manager, crictl
#   tools/build-images.sh ...      the sandbox image, our Dockerfile's image, Redis, busybox, Ray (cached by content)
#   npm run test:cluster           test/node/*.cluster.ts, one file at a time (one node per machine)
# Prints how long set-up took, and ends with tap's summary. Exit status: the suite's.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "ci-cluster: needs root (containerd, kubelet, iptables, network namespaces)" >&2; exit 1; }
start=$SECONDS
bash tools/setup.sh --node
echo "ci-cluster: node set-up took $((SECONDS - start)) s"
start=$SECONDS
bash "${RAYKEEPER_BUILD_IMAGES:-tools/build-images.sh}" pause busybox raykeeper redis ray
echo "ci-cluster: images took $((SECONDS - start)) s"
start=$SECONDS
status=0
npm run test:cluster || status=$?
echo "ci-cluster: test:cluster took $((SECONDS - start)) s (exit $status)"
exit "$status"
