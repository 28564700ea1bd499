// The Ray image's tag tells the truth: tools/install-ray.sh's release, the image tools/images/ray.sh
// builds (tag = the release it pip-installs), the samples' images and rayVersion, and the code's
// constant (src/ray-release.ts) are one value. No build: `build-images.sh --print` only names the image.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { RAY_IMAGE, RAY_RELEASE } from '../../src/ray-release.ts';

t.test('tools/install-ray.sh installs RAY_RELEASE', async (t) => {
  const m = /RAYKEEPER_RAY_VERSION:-([\d.]+)\}/.exec(readFileSync(join(REPO_ROOT, 'tools/install-ray.sh'), 'utf8'));
  t.equal(m?.[1], RAY_RELEASE);
});

t.test('the Ray image is tagged with the release it holds', async (t) => {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'RAYKEEPER_RAY_VERSION'));
  const r = spawnSync('bash', [join(REPO_ROOT, 'tools/build-images.sh'), '--print', 'ray'], { encoding: 'utf8', env });
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, new RegExp(`^name=docker\\.io/rayproject/ray:${RAY_RELEASE.replace(/\./g, '\\.')} archive=`, 'm'));
  // The recipe pip-installs ray_version and tags ray_ref with it; it refuses samples naming another tag.
  const recipe = readFileSync(join(REPO_ROOT, 'tools/images/ray.sh'), 'utf8');
  t.match(recipe, /ray_ref\(\) \{ echo "docker\.io\/rayproject\/ray:\$\(ray_version\)"; \}/);
  t.match(recipe, /\[ "\$\(ray_sample_tags\)" = "\$v" \] \|\| die/);
});

t.test('every sample names that image and rayVersion', async (t) => {
  const dir = join(REPO_ROOT, 'manifests/samples');
  const images: string[] = [];
  const versions: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === 'image' && typeof x === 'string' && x.startsWith('rayproject/')) images.push(x);
        if (k === 'rayVersion') versions.push(String(x));
        walk(x);
      }
    }
  };
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.yaml'))) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, f), 'utf8'))) walk(doc.toJS());
  }
  t.ok(images.length >= 6, `${images.length} Ray containers in the samples`);
  t.same([...new Set(images)], [RAY_IMAGE]);
  t.same([...new Set(versions)], [RAY_RELEASE]);
});
