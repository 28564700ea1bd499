# Redis for the samples (manifests/samples/redis.yaml, like KubeRay's external-Redis sample): Debian's
# redis-server (7.0 in bookworm) under the ref the sample names. As in the official image: data in
# /data, and without a config file or password, protected mode off so pods can reach it.
redis_ref() { echo docker.io/library/redis:7.4; }
redis_deps() { echo debian; }
redis_inputs() { :; }
redis_build() {
  local c
  c="$(bah from --pull=never "$(debian_ref)")"
  bah run "$c" -- sh -c 'export DEBIAN_FRONTEND=noninteractive && apt-get update -qq && apt-get install -y -qq redis-server >/dev/null &&
    apt-get clean && rm -rf /var/lib/apt/lists/* /var/log/apt/* /var/log/dpkg.log &&
    mkdir -p /data && chown redis:redis /data && redis-server --version' >&2
  bah config --workingdir /data --user "$(bah run "$c" -- id -u redis):$(bah run "$c" -- id -g redis)" \
    --port 6379/tcp --cmd '["redis-server","--protected-mode","no"]' "$c"
  commit_image "$c" redis
}
