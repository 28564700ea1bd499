# The pod sandbox image containerd's CRI starts for every pod (its `sandbox_image`): a static busybox
# whose entrypoint waits forever and exits 0 on SIGTERM/SIGINT (as the real pause does).
pause_ref() { echo registry.k8s.io/pause:3.10; }
pause_deps() { :; }
pause_inputs() { sha256sum < "$(static_busybox)"; }
pause_build() {
  local c
  c="$(bah from scratch)"
  bah copy --quiet --chmod 0755 "$c" "$(static_busybox)" /bin/busybox >/dev/null
  bah config --entrypoint '["/bin/busybox","sh","-c","trap \"exit 0\" TERM INT; while :; do /bin/busybox sleep 3600 & wait $!; done"]' \
    --cmd '' --user 65535:65535 --label io.raykeeper.images.recipe=pause "$c"
  commit_image "$c" pause
}
