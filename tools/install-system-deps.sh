#!/usr/bin/env bash
# Debian packages the tests and `raykeeper dev` need: redis-server (real Redis, TLS-capable, with
# redis-sentinel), redis-tools (redis-cli, used by the benchmark's baseline) and prometheus (promtool checks
# and unit-tests the alert rules the chart ships). Idempotent.
#   --images  also what tools/build-images.sh needs: buildah, debootstrap (+ Debian's keyring),
#             busybox-static, ca-certificates, runc (test/images runs the images with it)
#   --node    also what the real node (`raykeeper dev --kubelet`, `npm run test:cluster`) runs:
#             containerd 1.6 and runc, containernetworking-plugins (bridge, host-local, loopback CNI
#             plugins in /usr/lib/cni), dnsmasq-base (cluster DNS), conntrack (kube-proxy), iptables,
#             and everything --images installs (the node runs those images)
#   --ray     also what tools/install-ray.sh needs: python3 with venv and ensurepip (python3-venv)
#   --check   exit 0 when nothing is missing, 1 otherwise (installs nothing)
set -euo pipefail
images=false node=false ray=false check=false
for arg in "$@"; do
  case "$arg" in
    --images) images=true ;;
    --node) node=true images=true ;;
    --ray) ray=true ;;
    --check) check=true ;;
    *) echo "install-system-deps: unknown argument $arg (usage: $0 [--images] [--node] [--ray] [--check])" >&2; exit 2 ;;
  esac
done
need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-cli >/dev/null || need+=(redis-tools)
command -v redis-sentinel >/dev/null || need+=(redis-sentinel)
command -v promtool >/dev/null || need+=(prometheus)
if $ray && ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  command -v python3 >/dev/null || need+=(python3)
  need+=(python3-venv)
fi
if $images; then
  command -v buildah >/dev/null || need+=(buildah)
  command -v debootstrap >/dev/null || need+=(debootstrap)
  [ -s /usr/share/keyrings/debian-archive-keyring.gpg ] || need+=(debian-archive-keyring)
  dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
  command -v runc >/dev/null || need+=(runc)
  [ -s /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
fi
if $node; then
  command -v containerd >/dev/null || need+=(containerd)
  [ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
  command -v dnsmasq >/dev/null || need+=(dnsmasq-base)
  command -v conntrack >/dev/null || need+=(conntrack)
  command -v iptables >/dev/null || need+=(iptables)
fi
if $check; then [ ${#need[@]} -eq 0 ]; exit; fi
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
  # The package starts a system redis on 6379; tests start their own on free ports.
  $SUDO systemctl disable --now redis-server >/dev/null 2>&1 || true
  # Likewise containerd: the node starts its own, with its own config and state directories.
  $SUDO systemctl disable --now containerd >/dev/null 2>&1 || true
  # And Prometheus: only its promtool is used.
  $SUDO systemctl disable --now prometheus prometheus-node-exporter >/dev/null 2>&1 || true
fi
redis-server --version
if $node; then containerd --version; runc --version | head -1; fi
