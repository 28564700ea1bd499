# rayproject/ray:<version>, <version> being the Ray release tools/install-ray.sh installs; the image
# holds exactly that release, and manifests/samples must name exactly that tag (the build fails
# otherwise). The Debian base with Debian's python3 and Ray from PyPI (ray[default]: the dashboard
# and its agent, which KubeRay's probes ask). As KubeRay expects of a Ray image: `python` and
# `ray` on the PATH of a login shell (KubeRay runs `bash -lc`), wget (its probes), user `ray` uid 1000
# gid 100 with HOME /home/ray. As the official image also has it: procps (KubeRay's GCS fault-tolerance
# e2e test runs `pkill gcs_server` in the head) and Python bytecode compiled at build time. Without the
# bytecode every Python process of every Ray pod (raylet's workers, the dashboard, its agents, the
# submitter) compiles Ray's modules again at each start (user ray cannot write the image's
# site-packages, so nothing is cached), which under a pod's CPU limit is most of a head's start.
ray_version() {
  [ -n "${RAYKEEPER_RAY_VERSION:-}" ] && { echo "$RAYKEEPER_RAY_VERSION"; return; }
  sed -n 's/.*RAYKEEPER_RAY_VERSION:-\([0-9][0-9.]*\)}.*/\1/p' "$REPO_ROOT/tools/install-ray.sh" | head -1
}
# The tags the samples name (one line each).
ray_sample_tags() { grep -rhoE 'rayproject/ray:[0-9A-Za-z._-]+' "$REPO_ROOT/manifests/samples" | cut -d: -f2 | sort -u; }
ray_ref() { echo "docker.io/rayproject/ray:$(ray_version)"; }
ray_deps() { echo debian; }
ray_inputs() { echo "ray=$(ray_version)"; }
ray_build() {
  local v
  v="$(ray_version)"; [ -n "$v" ] || die "ray: no Ray version in tools/install-ray.sh"
  [ "$(ray_sample_tags)" = "$v" ] || die "ray: manifests/samples name rayproject/ray:$(ray_sample_tags | paste -sd, -); the image holds Ray $v (tools/install-ray.sh): name rayproject/ray:$v there"
  ray_image_build ray "$v"
}
# Builds image $1 holding Ray $2 from PyPI (also tools/images/rayupgrade.sh's).
ray_image_build() {
  local name="$1" v="$2" c work="$IMAGES_DIR/work/$1"
  # pip trusts what the host trusts (a TLS-intercepting proxy's CA, if any): bind-mounted over /mnt
  # (empty in the base) for this step only.
  rm -rf "$work"; mkdir -p "$work"; cp "$(host_ca_bundle)" "$work/ca.crt"
  c="$(bah from --pull=never "$(debian_ref)")"
  # Bytecode: unchecked-hash .pyc files are used without comparing them to the sources (the image never
  # changes under them), so no start-up stats or recompiles a module.
  bah run -v "$work:/mnt:ro" -e PIP_CERT=/mnt/ca.crt -e PIP_DISABLE_PIP_VERSION_CHECK=1 -e PIP_NO_CACHE_DIR=1 "$c" -- sh -c '
    export DEBIAN_FRONTEND=noninteractive && apt-get update -qq &&
    apt-get install -y -qq python3 python3-pip python-is-python3 wget ca-certificates procps >/dev/null &&
    pip install -q --no-compile --break-system-packages --root-user-action=ignore "ray[default]=='"$v"'" &&
    apt-get clean && rm -rf /var/lib/apt/lists/* /var/log/apt/* /var/log/dpkg.log &&
    find /usr/local/lib /usr/lib/python3 -name __pycache__ -prune -exec rm -rf {} + &&
    python -m compileall -q -j 0 --invalidation-mode unchecked-hash /usr/local/lib /usr/lib/python3 >/dev/null &&
    useradd --uid 1000 --gid 100 --create-home --shell /bin/bash ray' >&2
  rm -rf "$work"
  bah config --user 1000:100 --workingdir /home/ray --env HOME=/home/ray \
    --label "io.raykeeper.ray-version=$v" --cmd '["bash"]' "$c"
  # What KubeRay runs in this image: `ray` and `python` from a login shell, its cleanup's import, wget,
  # pkill; and Ray's modules imported from bytecode (an import that compiled would have nowhere to write).
  bah run "$c" -- bash -lc 'test "$(python -c "import ray; print(ray.__version__)")" = "'"$v"'" &&
    python -c "from ray._private.gcs_utils import cleanup_redis_storage" && ray --version && command -v wget pkill &&
    python -c "import ray, ray.dashboard, importlib.util as u, os; m = ray.__file__; assert os.path.exists(u.cache_from_source(m)), m"' >&2 ||
    die "$name: the image does not run what KubeRay runs in it"
  commit_image "$c" "$name"
}
