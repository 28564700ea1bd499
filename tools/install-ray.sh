#!/usr/bin/env bash
# Optional: a real Ray (from PyPI) for the tests that start a Ray head against the test Redis and
# submit real jobs. Installed into a venv in the cache, never into the system Python. Failure is not
# fatal: those tests then skip with a printed reason. Prints the path of the `ray` executable.
# The release is the project's one Ray release (src/ray-release.ts): tools/images/ray.sh builds
# rayproject/ray:<it> with it, and manifests/samples name that tag (test/images/ray-release.test.ts).
set -uo pipefail
cache="${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}"
venv="$cache/ray-venv"
version="${RAYKEEPER_RAY_VERSION:-2.60.0}"
if [ -x "$venv/bin/ray" ] && "$venv/bin/python" -c "import ray, sys; sys.exit(ray.__version__ != '$version')" 2>/dev/null; then
  echo "$venv/bin/ray"; exit 0
fi
echo "installing ray[default]==$version into $venv (about a minute)..." >&2
python3 -m venv "$venv" >&2 && "$venv/bin/pip" install -q "ray[default]==$version" >&2 || { echo "ray install failed; Ray tests will skip" >&2; exit 1; }
echo "$venv/bin/ray"
