// raykeeper outside its repository, as a CI job gets it: `npm pack` of this checkout holds only what runs;
// installed into a fresh project of its own (npm from the registry or its cache, Node 22 first on PATH),
// `npx raykeeper` answers --version and mutates a GCS-FT RayCluster, and README's CI recipe runs there as
// README writes it (read from README itself: its install command, then its workflow's `run:` steps).
// An older Node gets one clear message.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { packCheckout } from '../helpers/package.ts';

const SECTION = "Checking the webhook's answers from CI";

/** README's CI recipe: the shell lines of the section's first ```sh block and its workflow's `run:` steps. */
export function ciRecipe(readme: string): { install: string[]; steps: string[] } {
  const section = readme.split(/^## /m).find((s) => s.startsWith(SECTION));
  if (section === undefined) throw new Error(`README has no "## ${SECTION}" section`);
  const sh = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  const workflow = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  if (sh === undefined || workflow === undefined) throw new Error(`"## ${SECTION}" needs a \`\`\`sh block and a \`\`\`yaml workflow`);
  const install = sh
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l !== '');
  const jobs = (parse(workflow) as { jobs: Record<string, { steps: Array<{ run?: string }> }> }).jobs;
  const steps = Object.values(jobs).flatMap((job) => job.steps.flatMap((s) => (s.run === undefined ? [] : [s.run])));
  return { install, steps };
}

const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const work = mkdtempSync(join(tmpdir(), 'raykeeper-package-test-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));

// The project's commands see this Node (22) first, as actions/setup-node arranges; none of the npm_*
// settings of the `npm test` that runs this file.
const env: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries({ ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` }).filter(
    ([k]) => !k.startsWith('npm_') && k !== 'INIT_CWD',
  ),
);
const sh = (cwd: string, command: string) => {
  const res = spawnSync('bash', ['-e', '-c', command], { cwd, env, encoding: 'utf8', timeout: 240_000 });
  return {
    code: res.status,
    stdout: res.stdout,
    stderr: res.stderr,
    name: `$ ${command}`,
    output: { stdout: res.stdout, stderr: res.stderr },
  };
};

/** A Node that reports a version below 22.19: the system's where it is older (v20 here), else this one told to say 20.0.0. */
function olderNode(): string[] {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const node = join(dir, 'node');
    if (dir.includes('node_modules') || !existsSync(node)) continue;
    const [major = 0, minor = 0] = spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' })
      .stdout.trim()
      .split('.')
      .map(Number);
    if (major < 22 || (major === 22 && minor < 19)) return [node];
    break;
  }
  return [process.execPath, '--import', `data:text/javascript,Object.defineProperty(process.versions,'node',{value:'20.0.0'})`];
}

t.test('the README recipe is one the test can read', async (t) => {
  t.throws(() => ciRecipe('# x\n## Other\n'), /no "## Checking the webhook's answers from CI" section/);
  const { install, steps } = ciRecipe(readme);
  t.same(install, [`npm install --save-dev ./vendor/raykeeper-${version}.tgz`], "the install names this version's tarball");
  t.match(steps.at(-1), /^npx raykeeper mutate .*--report github/, 'the gate reports GitHub annotations');
});

// npm pack (its prepack compiles the tree), npm install from the registry and the recipe's commands: minutes on
// 2 busy cores, more than tap's default file timeout.
t.setTimeout(20 * 60_000);
t.test('npm pack, installed into a fresh project', async (t) => {
  const { tarball, files } = packCheckout(work);
  t.equal(basename(tarball), `raykeeper-${version}.tgz`);
  t.same(
    files.filter((f) =>
      /^(test|tools|bench|localcluster|dev|src|kube|webhook|controller|certs)\/|^dist\/(dev|localcluster)\/|\.ts$/.test(f),
    ),
    [],
    'no tests, tools, benchmarks, local cluster, dev, nor TypeScript sources',
  );
  for (const f of [
    'package.json',
    'LICENSE',
    'bin/raykeeper.js',
    'dist/bin/cli.js',
    'dist/webhook/mutate-cli.js',
    'manifests/default/kustomization.yaml',
  ])
    t.ok(files.includes(f), `holds ${f}`);
  t.comment(`npm pack: ${files.length} files`);

  const project = join(work, 'project');
  mkdirSync(join(project, 'deploy', 'ray'), { recursive: true });
  const init = sh(project, 'npm init -y');
  t.equal(init.code, 0, init.name, init.output);
  const { install, steps } = ciRecipe(readme);
  const vendored = /\.\/(\S+\.tgz)/.exec(install[0]!)?.[1];
  if (vendored === undefined) throw new Error(`no tarball path in ${install[0]}`);
  mkdirSync(dirname(join(project, vendored)), { recursive: true });
  copyFileSync(tarball, join(project, vendored));
  for (const command of install) {
    const res = sh(project, command);
    t.equal(res.code, 0, res.name, res.output);
  }
  t.notMatch(readFileSync(join(project, 'package-lock.json'), 'utf8'), /"dev\/|localcluster/, 'the lock names the package only');

  t.test('npx raykeeper --version, and mutate of a GCS-FT RayCluster', async (t) => {
    const v = sh(project, 'npx raykeeper --version');
    t.equal(v.code, 0, v.name, v.output);
    t.equal(v.stdout, `raykeeper ${version}\n`);
    const sub = sh(project, 'npx raykeeper mutate --version');
    t.equal(sub.stdout, `raykeeper ${version}\n`, 'every subcommand answers it');
    copyFileSync(join(REPO_ROOT, 'manifests', 'samples', 'raycluster-gcs-ft.yaml'), join(project, 'deploy', 'ray', 'raycluster.yaml'));
    const res = sh(project, 'npx raykeeper mutate -f deploy/ray/raycluster.yaml');
    t.equal(res.code, 0, res.name, res.output);
    const stored = parse(res.stdout) as {
      metadata: { finalizers: string[] };
      spec: { gcsFaultToleranceOptions: { externalStorageNamespace: string } };
    };
    t.same(stored.metadata.finalizers, ['ray.io/gcs-ft-redis-cleanup-finalizer']);
    t.match(stored.spec.gcsFaultToleranceOptions.externalStorageNamespace, /^[0-9a-f-]{36}$/, 'a fresh storage namespace pinned');
    // The install overlay builds on the package's own manifests.
    const certs = sh(project, 'npx raykeeper certs generate --out certs --service s --namespace n --kustomize overlay');
    t.equal(certs.code, 0, certs.name, certs.output);
    const base = /resources:\n\s+- (\S+)/.exec(readFileSync(join(project, 'overlay', 'kustomization.yaml'), 'utf8'))?.[1];
    t.equal(base, '../node_modules/raykeeper/manifests/default');
    t.ok(existsSync(join(project, 'overlay', `${base}/kustomization.yaml`)), 'and it is there');
    const dev = sh(project, 'npx raykeeper dev');
    t.equal(dev.code, 2);
    t.match(dev.stderr, /^raykeeper dev runs from a checkout of the raykeeper repository, not from the package/);
  });

  t.test("README's workflow steps, as written, in the project", async (t) => {
    copyFileSync(join(REPO_ROOT, 'manifests', 'samples', 'rayjob.yaml'), join(project, 'deploy', 'ray', 'rayjob.yaml'));
    for (const step of steps) {
      const res = sh(project, step);
      t.equal(res.code, 0, res.name, res.output);
      t.notMatch(res.stdout, /^::error/m, `${step}: no error annotation`);
    }
    // The gate fails on what the validating webhook denies, with an annotation on the file and line.
    writeFileSync(
      join(project, 'deploy', 'ray', 'zz-denied.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n---\napiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: bad}\nspec: {headGroupSpec: {template: {spec: {containers: []}}}}\n',
    );
    const gate = sh(project, steps.at(-1)!);
    t.equal(gate.code, 1, gate.name, gate.output);
    t.match(
      gate.stdout,
      /^::error file=deploy\/ray\/zz-denied\.yaml,line=5,title=raykeeper mutate%3A RayCluster bad::denied by the validating webhook: The RayCluster spec is invalid: headGroupSpec should have at least one container$/m,
    );
  });

  t.test('an older Node: one clear message, exit 1', async (t) => {
    const [node, ...args] = olderNode() as [string, ...string[]];
    const res = spawnSync(node, [...args, join(project, 'node_modules', '.bin', 'raykeeper'), '--version'], { encoding: 'utf8', env });
    t.equal(res.status, 1);
    t.equal(res.stdout, '');
    t.match(res.stderr, /^raykeeper needs Node\.js 22\.19 or later; this is v20\.\d+\.\d+ \(/);
    t.match(res.stderr, /actions\/setup-node with node-version: 22/);
  });
});
