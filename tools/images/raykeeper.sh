# Our image, from the repository's Dockerfile unchanged: `buildah build` with pulls disabled, so its
# `FROM node:22-slim` is the node image above; its `npm ci` reaches the npm registry through the host
# network. Tagged raykeeper:<package.json version> (docker.io/library/raykeeper:<version> once
# normalised, the name the kubelet looks up for `image: raykeeper:<version>`). Verified before export:
# `raykeeper --help` and `raykeeper redis-cleanup --help` run in it as its user.
raykeeper_version() { sed -n 's/^  "version": "\([^"]*\)".*/\1/p' "$REPO_ROOT/package.json" | head -1; }
raykeeper_ref() { echo "docker.io/library/raykeeper:$(raykeeper_version)"; }
raykeeper_deps() { echo node; }
# The Dockerfile and every file its COPY lines name (whatever the Dockerfile says today), but those a
# stage copies from an earlier stage (`COPY --from=...`).
raykeeper_sources() {
  echo Dockerfile
  awk 'toupper($1) == "COPY" && $2 !~ /^--from=/ { for (i = 2; i < NF; i++) if ($i !~ /^--/) print $i }' "$REPO_ROOT/Dockerfile"
}
raykeeper_inputs() {
  # shellcheck disable=SC2046
  hash_files $(raykeeper_sources)
}
raykeeper_build() {
  local c out
  # The Dockerfile's `npm ci` trusts what the host trusts (a TLS-intercepting proxy's CA, if any): a
  # directory with the host's CA bundle and an npmrc naming it is bind-mounted over npm's global config
  # directory /usr/local/etc (empty in the base) for the RUN steps only; the image keeps nothing of it.
  local work="$IMAGES_DIR/work/raykeeper"
  rm -rf "$work"; mkdir -p "$work/etc"
  cp "$(host_ca_bundle)" "$work/etc/build-ca.crt"
  printf 'cafile=/usr/local/etc/build-ca.crt\nupdate-notifier=false\n' > "$work/etc/npmrc"
  bah build --quiet --pull=never --isolation chroot --network host --layers=false -v "$work/etc:/usr/local/etc:ro" \
    --label "io.raykeeper.images.key=$(image_key raykeeper)" \
    -f "$REPO_ROOT/Dockerfile" -t "$(raykeeper_ref)" "$REPO_ROOT" >/dev/null
  rm -rf "$work"
  c="$(bah from --pull=never "$(raykeeper_ref)")"
  out="$(bah run "$c" -- raykeeper --help 2>&1)" || die "raykeeper: \`raykeeper --help\` failed in the image: $out"
  grep -q redis-cleanup <<<"$out" || die "raykeeper: \`raykeeper --help\` does not list redis-cleanup: $out"
  out="$(bah run "$c" -- raykeeper redis-cleanup --help 2>&1)" || die "raykeeper: \`raykeeper redis-cleanup --help\` failed in the image: $out"
  log "raykeeper: raykeeper --help and raykeeper redis-cleanup --help run in the image as $(bah run "$c" -- id -u):$(bah run "$c" -- id -g)"
  bah rm "$c" >/dev/null
  export_image raykeeper
}
