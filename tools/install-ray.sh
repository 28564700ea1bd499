#!/usr/bin/env bash
# A real Ray (from PyPI) for `raykeeper dev` (RayJobs run to Complete) and the tests that start a Ray
# head against the test Redis and submit real jobs; tools/setup.sh runs it (--no-ray skips it).
# Installed into a venv in the cache, never into the system Python. Prints the path of the `ray`
# executable; exits 1 when the install fails. `--check`: exit 0 when it is installed (installs nothing).
# The release is the project's one Ray release (src/ray-release.ts): tools/images/ray.sh builds
# rayproject/ray:<it> with it, and manifests/samples name that tag (test/images/ray-release.test.ts).
set -uo pipefail
cache="${RAYKEEPER_CACHE:-$HOME/.cache/raykeeper}"
venv="$cache/ray-venv"
version="${RAYKEEPER_RAY_VERSION:-2.60.0}"
installed() { [ -x "$venv/bin/ray" ] && "$venv/bin/python" -c "import sys; from importlib.metadata import version; sys.exit(version('ray') != '$version')" 2>/dev/null; }
if [ "${1:-}" = --check ]; then installed; exit; fi
if installed; then
  echo "$venv/bin/ray"; exit 0
fi
echo "installing ray[default]==$version into $venv (about a minute)..." >&2
python3 -m venv "$venv" >&2 && "$venv/bin/pip" install -q "ray[default]==$version" >&2 || { echo "ray install failed (the tests that need Ray fail without it)" >&2; exit 1; }
echo "$venv/bin/ray"
