# rayproject/ray:2.51.0: the release KubeRay's e2e TestRayClusterUpgradeStrategy switches its cluster to
# (test/e2e/raycluster_test.go: image and rayVersion 2.51.0, the Recreate upgrade's trigger). Built as
# the Ray image is (tools/images/ray.sh), from PyPI; not in the default set: `npm run test:kuberay`
# builds and imports it when it runs that test.
RAYUPGRADE_VERSION=2.51.0
rayupgrade_ref() { echo "docker.io/rayproject/ray:$RAYUPGRADE_VERSION"; }
rayupgrade_deps() { echo debian; }
rayupgrade_inputs() { echo "ray=$RAYUPGRADE_VERSION"; sha256sum <"$REPO_ROOT/tools/images/ray.sh"; }
rayupgrade_build() { ray_image_build rayupgrade "$RAYUPGRADE_VERSION"; }
