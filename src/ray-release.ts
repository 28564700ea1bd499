// The one Ray release this project runs and names. tools/install-ray.sh installs it (the host's venv:
// the tests that start a Ray head, `raykeeper dev`'s Ray pods), tools/images/ray.sh builds the image
// rayproject/ray:<it> with exactly it inside, and manifests/samples name that image and rayVersion.
// 2.60.0: the release the GCS table prefixes in src/redis/keys.ts were read from. The cleanup skips its
// keyspace sweep for a Ray up to this release (src/redis/sweep.ts): raise it only with RAY_TABLES re-read.
// test/images/ray-release.test.ts holds the script, the recipe and the samples to this value.
export const RAY_RELEASE = '2.60.0';
/** The Ray image as the samples name it (short Docker Hub form). */
export const RAY_IMAGE = `rayproject/ray:${RAY_RELEASE}`;
