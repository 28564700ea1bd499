// test/ mirrors the source tree (issue 46): test/X/ tests X/ (a folder at the top, or a feature folder of
// src/ whose controller/ side it tests too), so a newcomer finds the test of kube/queue.ts in test/kube/.
// The folders beside the mirror are listed here, each with what it holds (docs/development.md, Layout).
import t from 'tap';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../localcluster/binaries.ts';

/** test/ folders named for a source folder other than their own name. */
export const RENAMED: Readonly<Record<string, string>> = {
  /** The modules at the top of src/: the shared model. */
  model: 'src',
  chart: 'charts/raykeeper',
  images: 'tools/images',
};

/** test/ folders that mirror no source folder. */
export const BESIDE: Readonly<Record<string, string>> = {
  helpers: 'what several folders of tests share',
  setup: "tap's before and after scripts",
  ci: 'checks over the whole tree',
  e2e: 'the seed scenario on the real API server, webhook and controller together',
  kuberay: "beside KubeRay's real operator",
  'kuberay-e2e': "KubeRay's own e2e suites (npm run test:kuberay)",
  monitoring: 'the alerts and dashboards an admin installs',
  scale: 'simulated nodes (kwok)',
  node: 'the real node (npm run test:cluster)',
};

/** The source folder a test/ folder mirrors, or undefined when it mirrors none. */
export function mirrored(folder: string, exists: (path: string) => boolean): string | undefined {
  const candidates = [RENAMED[folder], folder, `src/${folder}`].filter((c): c is string => c !== undefined);
  return candidates.find(exists);
}

t.test('mirrored: a top folder, a feature folder of src/, a renamed one, none', async (t) => {
  const tree = new Set(['kube', 'src', 'src/gcsft', 'charts/raykeeper']);
  const exists = (p: string): boolean => tree.has(p);
  t.equal(mirrored('kube', exists), 'kube');
  t.equal(mirrored('gcsft', exists), 'src/gcsft');
  t.equal(mirrored('chart', exists), 'charts/raykeeper');
  t.equal(mirrored('model', exists), 'src');
  t.equal(mirrored('cluster', exists), undefined, 'a folder named for nothing in the tree');
});

t.test('every folder of test/ mirrors a source folder or is one of those beside the mirror', async (t) => {
  const folders = readdirSync(join(REPO_ROOT, 'test'), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
  t.ok(folders.includes('kube') && folders.includes('gcsft'), `test/ read (${folders.length} folders)`);
  const exists = (p: string): boolean => existsSync(join(REPO_ROOT, p));
  t.same(
    folders.filter((f) => !(f in BESIDE) && mirrored(f, exists) === undefined),
    [],
    'no test/ folder named for nothing: move its tests to the folder of what they test, or list it in BESIDE',
  );
  for (const f of Object.keys(BESIDE)) t.ok(folders.includes(f), `test/${f}/ is there`);
  t.ok(existsSync(join(REPO_ROOT, 'test', 'kube', 'queue.test.ts')), 'the test of kube/queue.ts is test/kube/queue.test.ts');
});
