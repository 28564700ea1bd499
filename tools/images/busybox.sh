# A small test image: Debian's static busybox with its applets linked into /bin (sh, nc, ...; its
# wget segfaults here, use nc). Tagged with Debian's busybox version.
busybox_version() { dpkg-query -W -f '${Version}' busybox-static 2>/dev/null | sed 's/^[0-9]*://; s/^\([0-9]*\.[0-9]*\).*/\1/'; }
busybox_ref() { echo "docker.io/library/busybox:$(busybox_version)"; }
busybox_deps() { :; }
busybox_inputs() { sha256sum < "$(static_busybox)"; }
busybox_build() {
  local c
  c="$(bah from scratch)"
  bah copy --quiet --chmod 0755 "$c" "$(static_busybox)" /bin/busybox >/dev/null
  bah run "$c" -- /bin/busybox sh -c '/bin/busybox --install -s /bin && mkdir -p /tmp /etc && chmod 1777 /tmp &&
    echo "root:x:0:0:root:/root:/bin/sh" > /etc/passwd && echo "nobody:x:65534:65534:nobody:/:/bin/false" >> /etc/passwd &&
    printf "root:x:0:\nnobody:x:65534:\n" > /etc/group && command -v nc >/dev/null' >&2
  bah config --env PATH=/bin --cmd '["sh"]' "$c"
  commit_image "$c" busybox
}
