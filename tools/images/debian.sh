# The shared base: Debian bookworm by debootstrap (minbase) from Debian's packages, with
# bookworm-updates and bookworm-security applied, trimmed like the official -slim images.
DEBIAN_SUITE=bookworm
DEBIAN_MIRROR="${RAYKEEPER_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
debian_ref() { echo docker.io/library/debian:bookworm-slim; }
debian_deps() { :; }
debian_inputs() { echo "suite=$DEBIAN_SUITE mirror=$DEBIAN_MIRROR"; }
debian_build() {
  local work="$IMAGES_DIR/work/debian" root c
  root="$work/rootfs"
  debian_unmount() { local m; for m in proc sys dev/pts dev; do mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m" || true; done; }
  debian_unmount; rm -rf "$work"; mkdir -p "$work"
  trap debian_unmount EXIT
  debootstrap --variant=minbase --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
    "$DEBIAN_SUITE" "$root" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; die "debian: debootstrap failed (log: $work/debootstrap.log)"; }
  debian_unmount; trap - EXIT
  # As in the official slim images: no docs, man pages or apt caches, now or after later installs.
  cat > "$root/etc/apt/sources.list" <<SRC
deb $DEBIAN_MIRROR $DEBIAN_SUITE main
deb $DEBIAN_MIRROR $DEBIAN_SUITE-updates main
deb ${DEBIAN_MIRROR%/debian}/debian-security $DEBIAN_SUITE-security main
SRC
  cat > "$root/etc/dpkg/dpkg.cfg.d/slim" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
CFG
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' > "$root/etc/apt/apt.conf.d/90slim"
  printf 'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };\n' > "$root/etc/apt/apt.conf.d/91clean"
  # What debootstrap installed before that configuration existed.
  find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
  rm -rf "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
  : > "$root/etc/hostname"; : > "$root/etc/resolv.conf" # the runtime provides both
  tar --numeric-owner --xattrs -C "$root" -cf "$work/rootfs.tar" .
  c="$(bah from scratch)"
  bah add --quiet "$c" "$work/rootfs.tar" / >/dev/null
  rm -rf "$work"
  bah run "$c" -- sh -c 'export DEBIAN_FRONTEND=noninteractive && apt-get update -qq && apt-get upgrade -y -qq >/dev/null &&
    apt-get clean && rm -rf /var/lib/apt/lists/* /var/log/apt/* /var/log/dpkg.log /usr/share/doc/*/changelog* /usr/share/man/* /usr/share/info/* /tmp/* /var/tmp/*' >&2
  bah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd '["bash"]' "$c"
  commit_image "$c" debian
}
