#!/usr/bin/env bash
# Debian packages the tests and `raykeeper dev` need: redis-server (real Redis, TLS-capable, with
# redis-sentinel) and redis-tools (redis-cli, used by the benchmark's baseline). Idempotent.
# With --node, also what the real node (`raykeeper dev --kubelet`, `npm run test:cluster`) runs:
# containerd 1.6 and runc (the container runtime), containernetworking-plugins (bridge, host-local,
# loopback CNI plugins in /usr/lib/cni), dnsmasq-base (cluster DNS), conntrack (kube-proxy), and what
# tools/build-images.sh builds the images with, without a registry (buildah, debootstrap, busybox-static).
set -euo pipefail
node=false
for arg in "$@"; do
  case "$arg" in
    --node) node=true ;;
    *) echo "install-system-deps: unknown argument $arg (usage: $0 [--node])" >&2; exit 2 ;;
  esac
done
need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-cli >/dev/null || need+=(redis-tools)
command -v redis-sentinel >/dev/null || need+=(redis-sentinel)
if $node; then
  command -v containerd >/dev/null || need+=(containerd)
  command -v runc >/dev/null || need+=(runc)
  [ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
  command -v dnsmasq >/dev/null || need+=(dnsmasq-base)
  command -v conntrack >/dev/null || need+=(conntrack)
  command -v buildah >/dev/null || need+=(buildah)
  command -v debootstrap >/dev/null || need+=(debootstrap)
  command -v busybox >/dev/null || need+=(busybox-static)
  command -v iptables >/dev/null || need+=(iptables)
fi
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
  # The package starts a system redis on 6379; tests start their own on free ports.
  $SUDO systemctl disable --now redis-server >/dev/null 2>&1 || true
  # Likewise containerd: the node starts its own, with its own config and state directories.
  $SUDO systemctl disable --now containerd >/dev/null 2>&1 || true
fi
redis-server --version
if $node; then containerd --version; runc --version | head -1; fi
