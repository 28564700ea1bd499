// `raykeeper mutate` on real files, directories and stdin: defaulted objects, patches and review answers
// from the same code as the server (both answers for a review equal the server's answers), the CI gate
// (its exit code the same in every output mode, each finding printed once, Lists expanded, no objects an
// error), non-Ray objects untouched, a malformed document reported with its file and line while the others
// are still processed.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { run } from '../../webhook/mutate-cli.ts';
import { buildApp } from '../../webhook/app.ts';
import { runCapturing } from '../helpers/capture.ts';
import { FINALIZER, FT, NS_ANNOTATION, review, rayCluster } from '../admission/fixtures.ts';
import { capturingLogger, certDir } from './helpers.ts';

const BIN = fileURLToPath(new URL('../../bin/raykeeper.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'raykeeper-mutate-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const CLUSTER_YAML = `apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: demo
  namespace: ray
  annotations:
    ray.io/ft-enabled: "true"
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers: [{name: ray-head, image: "rayproject/ray:2.41.0"}]
`;
const CONFIGMAP_YAML = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: ray}
data: {weird: "__proto__"}
`;
const JOB_JSON = JSON.stringify({
  apiVersion: 'ray.io/v1',
  kind: 'RayJob',
  metadata: { name: 'job', namespace: 'ray' },
  spec: { entrypoint: 'python x.py', clusterSelector: { 'ray.io/cluster': 'demo' } },
});

const DENIED_YAML = `apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: bad, namespace: ray}
spec:
  headGroupSpec:
    template: {spec: {containers: [{name: ray-head, image: "rayproject/ray:2.41.0"}]}}
  workerGroupSpecs:
    - {groupName: small, minReplicas: 3, maxReplicas: 1, template: {spec: {containers: [{name: ray-worker}]}}}
`;

const mixed = join(dir, 'mixed.yaml');
writeFileSync(mixed, `${CLUSTER_YAML}---\n${CONFIGMAP_YAML}---\nkind: [broken\n---\n${JOB_JSON}\n`);
mkdirSync(join(dir, 'tree', 'nested'), { recursive: true });
writeFileSync(join(dir, 'tree', 'cluster.yaml'), CLUSTER_YAML);
writeFileSync(join(dir, 'tree', 'nested', 'job.json'), JOB_JSON);
writeFileSync(join(dir, 'tree', 'README.md'), '# not a manifest');

const mutateCmd = (args: string[]) => runCapturing(run, args);
const docs = (yaml: string) => parseAllDocuments(yaml).map((d) => d.toJS());

t.test(
  'yaml output: Ray objects defaulted, others untouched; a malformed document is reported with file and number, the rest processed',
  async (t) => {
    const res = await mutateCmd([mixed, '--storage-namespace', 'pinned-1']);
    t.equal(res.code, 2, 'exit 2: one document could not be read');
    t.match(res.stderr, new RegExp(`${mixed.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:20: error: not valid YAML or JSON`));
    const [cluster, configMap, job, extra] = docs(res.stdout);
    t.equal(extra, undefined, 'three objects printed');
    t.same(cluster.metadata.finalizers, [FINALIZER]);
    t.equal(cluster.metadata.annotations[NS_ANNOTATION], 'pinned-1');
    t.same(cluster.spec, docs(CLUSTER_YAML)[0].spec, 'the rest of the cluster unchanged');
    t.same(configMap, docs(CONFIGMAP_YAML)[0], 'the ConfigMap passes through untouched');
    t.same(job.status, { jobDeploymentStatus: 'New' });
    t.equal(job.spec.submissionMode, 'K8sJobMode');
  },
);

t.test('--check: nothing found, exit 0; --fail-on-change: one line per object relying on defaults, exit 3', async (t) => {
  const tree = join(dir, 'tree');
  const clean = await mutateCmd(['--check', tree]);
  t.equal(clean.code, 0, 'nothing the cluster would refuse');
  t.equal(clean.stdout, '');
  t.equal(
    clean.stderr,
    'raykeeper mutate: 2 objects in 2 files: 0 denied, 0 errors, 0 warnings (exit 0)\n',
    'README.md in the directory is not read',
  );

  const res = await mutateCmd(['--check', '--fail-on-change', tree]);
  t.equal(res.code, 3);
  const lines = res.stdout.trim().split('\n');
  t.equal(lines.length, 2, res.stdout);
  t.match(
    lines[0],
    /tree\/cluster\.yaml:1: RayCluster ray\/demo: relies on the webhook's defaults: metadata\.finalizers = \["ray\.io\/gcs-ft-redis-cleanup-finalizer"\]$/,
    'the finalizer; never the storage namespace the webhook pins',
  );
  t.match(lines[1], /tree\/nested\/job\.json:1: RayJob ray\/job: relies on the webhook's defaults: spec\.submissionMode = K8sJobMode/);
  t.notMatch(lines[1], /status/, "a RayJob's status is not asked of a manifest");

  const defaulted = await mutateCmd([tree]);
  t.equal(defaulted.code, 0);
  const stored = join(dir, 'stored.yaml');
  writeFileSync(stored, defaulted.stdout);
  const again = await mutateCmd(['--check', '--fail-on-change', stored]);
  t.equal(again.code, 0, 'what the webhook stores relies on no default');
  t.equal(again.stdout.trim().split('\n').length, 1, again.stdout);
  t.match(
    again.stdout,
    /stored\.yaml:1: RayCluster ray\/demo: warning: the manifest pins storage namespace "[0-9a-f-]{36}" in annotation/,
    'but its pinned namespace is not for committing',
  );
});

t.test('-o json: one object as itself, several as a List', async (t) => {
  const one = await mutateCmd(['-o', 'json', join(dir, 'tree', 'nested', 'job.json')]);
  t.equal(one.code, 0);
  t.equal(JSON.parse(one.stdout).kind, 'RayJob');
  const many = await mutateCmd(['-o', 'json', join(dir, 'tree')]);
  const list = JSON.parse(many.stdout);
  t.equal(list.kind, 'List');
  t.same(
    list.items.map((i: { kind: string }) => i.kind),
    ['RayCluster', 'RayJob'],
  );
});

t.test("-o review of an AdmissionReview file: both answers, each equal to the server's for the same request", async (t) => {
  const body = review(
    'RayCluster',
    'CREATE',
    rayCluster({ annotations: { [FT]: 'true', [NS_ANNOTATION]: 'theirs' }, finalizers: ['example.com/keep'] }),
  );
  const file = join(dir, 'review.json');
  writeFileSync(file, JSON.stringify(body));
  const res = await mutateCmd(['-o', 'review', file]);
  t.equal(res.code, 0);
  const answers = JSON.parse(res.stdout);
  t.match(answers, { source: file, document: 1, line: 1, object: 'AdmissionReview of RayCluster ray/demo' });
  const certs = await certDir(t);
  const app = await buildApp({
    certFile: certs.certFile,
    keyFile: certs.keyFile,
    logger: capturingLogger().logger,
    finalizerEnabled: true,
  });
  t.teardown(() => app.close());
  const server = (url: string, payload: unknown) =>
    app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(payload) });
  const mutating = await server('/mutate-ray-io-v1-raycluster', body);
  t.same(answers.mutating, mutating.json(), 'the mutating answer, patch included');
  t.ok(mutating.json().response.patch, 'and it carries a patch');
  // The API server sends the validating webhook the object as mutated.
  const patch = JSON.parse(Buffer.from(mutating.json().response.patch, 'base64').toString());
  const mutated = structuredClone(body) as { request: { object: { metadata: { finalizers: string[] } } } };
  mutated.request.object.metadata.finalizers.push(...patch.map((op: { value: string }) => op.value));
  const validating = await server('/validate-ray-io-v1-raycluster', mutated);
  t.same(answers.validating, validating.json(), 'the validating answer');

  const patched = await mutateCmd(['-o', 'patch', file]);
  t.same(JSON.parse(patched.stdout).patch, patch);

  // Denied: allowed by the mutating webhook, denied by the validating one; the exit code says so.
  const bad = review('RayCluster', 'CREATE', { ...rayCluster({}), spec: { headGroupSpec: { template: { spec: { containers: [] } } } } });
  const badFile = join(dir, 'review-denied.json');
  writeFileSync(badFile, JSON.stringify(bad));
  const denied = await mutateCmd(['-o', 'review', badFile]);
  t.equal(denied.code, 1);
  const both = JSON.parse(denied.stdout);
  t.equal(both.mutating.response.allowed, true);
  t.equal(both.validating.response.allowed, false);
  t.equal(both.validating.response.status.code, 403);
  t.match(
    denied.stderr,
    /^raykeeper mutate: .*review-denied\.json:1: AdmissionReview of RayCluster ray\/demo: denied by the validating webhook: The RayCluster spec is invalid: headGroupSpec should have at least one container\n$/,
  );
});

t.test('a document the webhook would refuse: exit 1 with the reason; its refusal in -o review', async (t) => {
  const file = join(dir, 'refused.yaml');
  writeFileSync(
    file,
    `${CLUSTER_YAML.replace('spec:\n', 'spec:\n  gcsFaultToleranceOptions: {backend: {toString: x}}\n')}---\n${CONFIGMAP_YAML}`,
  );
  const res = await mutateCmd([file]);
  t.equal(res.code, 1, 'the cluster would refuse it');
  t.match(
    res.stderr,
    /refused\.yaml:1: RayCluster ray\/demo: refused by the mutating webhook: object\.spec\.gcsFaultToleranceOptions\.backend must be a string/,
  );
  t.equal(docs(res.stdout).length, 1, 'the ConfigMap is still printed');
  const answers = (await mutateCmd(['-o', 'review', file])).stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  t.equal(answers[0].mutating.response.allowed, false);
  t.equal(answers[0].mutating.response.status.code, 400);
  t.equal(answers[0].validating, null, 'the API server stops at the refusal');
});

t.test('ENABLE_GCS_FT_REDIS_CLEANUP=false: no finalizer, as for the webhook', async (t) => {
  const before = process.env.ENABLE_GCS_FT_REDIS_CLEANUP;
  process.env.ENABLE_GCS_FT_REDIS_CLEANUP = 'false';
  try {
    const res = await mutateCmd([join(dir, 'tree', 'cluster.yaml')]);
    t.equal(docs(res.stdout)[0].metadata.finalizers, undefined);
    t.ok(docs(res.stdout)[0].metadata.annotations[NS_ANNOTATION], 'the namespace is still pinned');
  } finally {
    if (before === undefined) delete process.env.ENABLE_GCS_FT_REDIS_CLEANUP;
    else process.env.ENABLE_GCS_FT_REDIS_CLEANUP = before;
  }
});

t.test("kubectl's -f/--filename and -R: repeatable, commas, directories flat unless -R", async (t) => {
  const tree = join(dir, 'tree');
  const checked = (res: { stdout: string }) =>
    res.stdout
      .trim()
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => l.replace(/:\d+: .*/, '').replace(`${dir}/`, ''));
  const mutateCmd = (args: string[]) => runCapturing(run, args[0] === '--check' ? ['--fail-on-change', ...args] : args);
  t.same(checked(await mutateCmd(['--check', '-f', tree])), ['tree/cluster.yaml'], '-f DIR reads the directory, not its subdirectories');
  t.same(checked(await mutateCmd(['--check', '-R', '-f', tree])), ['tree/cluster.yaml', 'tree/nested/job.json'], '-R descends');
  t.same(
    checked(await mutateCmd(['--check', '--recursive', `--filename=${tree}`])),
    ['tree/cluster.yaml', 'tree/nested/job.json'],
    'long forms',
  );
  const file = join(tree, 'nested', 'job.json');
  t.same(
    checked(await mutateCmd(['--check', '-f', `${join(tree, 'cluster.yaml')},${file}`])),
    ['tree/cluster.yaml', 'tree/nested/job.json'],
    'one value, two paths',
  );
  t.same(
    checked(await mutateCmd(['--check', '-f', join(tree, 'cluster.yaml'), '-f', file])),
    ['tree/cluster.yaml', 'tree/nested/job.json'],
    'repeated -f',
  );
  t.same(
    checked(await mutateCmd(['--check', '-f', file, tree])),
    ['tree/nested/job.json', 'tree/cluster.yaml', 'tree/nested/job.json'],
    '-f before positional paths, a positional directory still recursive',
  );
  const notes = join(dir, 'notes.txt');
  writeFileSync(notes, CLUSTER_YAML);
  t.same(checked(await mutateCmd(['--check', '-f', notes])), ['notes.txt'], 'a file named by -f is read whatever its extension');
  const url = await mutateCmd(['-f', 'https://example.com/x.yaml']);
  t.equal(url.code, 2);
  t.match(url.stderr, /https:\/\/example\.com\/x\.yaml: error: URLs are not read/);
  const twice = await mutateCmd(['-f', '-', '-']);
  t.equal(twice.code, 2);
  t.match(twice.stderr, /stdin\) can be given only once/);
  const none = await mutateCmd(['--check']);
  t.equal(none.code, 2);
  t.equal(none.stderr, 'raykeeper mutate: give at least one -f FILE|DIR|- (or a positional path) (see raykeeper mutate --help)\n');
});

t.test('through the binary: stdin with -, usage errors exit 2', async (t) => {
  const res = spawnSync(process.execPath, [BIN, 'mutate', '--check', '--fail-on-change', '-'], {
    input: CLUSTER_YAML,
    encoding: 'utf8',
    timeout: 30_000,
  });
  t.equal(res.status, 3);
  t.match(res.stdout, /^\(stdin\):1: RayCluster ray\/demo: relies on the webhook's defaults/);
  const dashF = spawnSync(process.execPath, [BIN, 'mutate', '--check', '--fail-on-change', '-f', '-'], {
    input: CLUSTER_YAML,
    encoding: 'utf8',
    timeout: 30_000,
  });
  t.equal(dashF.status, 3, "kubectl's -f - reads stdin");
  t.match(dashF.stdout, /^\(stdin\):1: RayCluster ray\/demo: relies on the webhook's defaults/);
  const bad = spawnSync(process.execPath, [BIN, 'mutate', '-o', 'xml', '-'], { input: '', encoding: 'utf8', timeout: 30_000 });
  t.equal(bad.status, 2);
  t.equal(bad.stderr, 'raykeeper mutate: -o must be one of yaml, json, patch, review, got "xml" (see raykeeper mutate --help)\n');
  const unknown = spawnSync(process.execPath, [BIN, 'mutate', '--chekc', '-'], { input: '', encoding: 'utf8', timeout: 30_000 });
  t.equal(unknown.status, 2);
  t.equal(unknown.stderr, 'raykeeper mutate: unknown option --chekc (see raykeeper mutate --help)\n', 'one line, no usage');
  const none = spawnSync(process.execPath, [BIN, 'mutate'], { encoding: 'utf8', timeout: 30_000 });
  t.equal(none.status, 2);
  const missing = spawnSync(process.execPath, [BIN, 'mutate', join(dir, 'nope.yaml')], { encoding: 'utf8', timeout: 30_000 });
  t.equal(missing.status, 2);
  t.match(missing.stderr, /nope\.yaml: error: ENOENT/);
  const help = spawnSync(process.execPath, [BIN, '--help'], { encoding: 'utf8', timeout: 30_000 });
  t.match(help.stdout, /^\s+mutate\s+\S/m);
});

t.test('--check reports what the validating webhook would deny (exit 1) and its warnings, each once', async (t) => {
  const invalid = join(dir, 'invalid.yaml');
  writeFileSync(invalid, DENIED_YAML);
  const res = await mutateCmd(['--check', invalid]);
  t.equal(res.code, 1);
  t.match(
    res.stdout,
    /invalid.yaml:1: RayCluster ray\/bad: denied by the validating webhook: The RayCluster spec is invalid: worker group small has minReplicas 3 greater than maxReplicas 1/,
  );
  t.equal(res.stdout.trim().split('\n').length, 1, 'printed once');
  t.notMatch(res.stderr, /denied by/, 'not again on stderr');
  const warned = join(dir, 'warned.yaml');
  writeFileSync(
    warned,
    `apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: warned, namespace: ray}
spec:
  autoscalerOptions: {version: v2}
  headGroupSpec:
    template: {spec: {containers: [{name: ray-head, image: "rayproject/ray:2.41.0"}]}}
`,
  );
  const ok = await mutateCmd(['--check', warned]);
  t.equal(ok.code, 0, 'a warning alone does not fail');
  t.match(
    ok.stdout,
    /warned.yaml:1: RayCluster ray\/warned: warning: spec.autoscalerOptions is set but spec.enableInTreeAutoscaling is not true/,
  );
  t.notMatch(ok.stderr, /warning:/, 'printed once');

  // Beside KubeRay (--companion on), as the webhook started with it: no note about our own operator.
  const ingress = join(dir, 'ingress.yaml');
  writeFileSync(
    ingress,
    `apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: ingress, namespace: ray}
spec:
  headGroupSpec:
    enableIngress: true
    template: {spec: {containers: [{name: ray-head, image: "rayproject/ray:2.41.0"}]}}
`,
  );
  t.match((await mutateCmd(['--check', ingress])).stdout, /does not act on spec.headGroupSpec.enableIngress/, 'standalone: noted');
  const companion = await mutateCmd(['--check', '--companion', 'on', ingress]);
  t.equal(companion.code, 0);
  t.equal(companion.stdout, '', 'companion: nothing to say');
  const wrong = await mutateCmd(['--check', '--companion', 'auto', ingress]);
  t.equal(wrong.code, 2);
  t.match(wrong.stderr, /--companion must be on or off, got "auto"/);
});

const indent = (yaml: string) =>
  yaml
    .trimEnd()
    .split('\n')
    .map((l, i) => (i === 0 ? `- ${l}` : `  ${l}`))
    .join('\n');

t.test('Lists as kubectl get -o yaml writes them: every item checked, on its own line', async (t) => {
  const list = join(dir, 'list.yaml');
  writeFileSync(
    list,
    `apiVersion: v1\nkind: List\nmetadata: {resourceVersion: ""}\nitems:\n${indent(CONFIGMAP_YAML)}\n${indent(DENIED_YAML)}\n`,
  );
  const res = await mutateCmd(['--check', list]);
  t.equal(res.code, 1, 'the denied item fails the gate');
  t.equal(
    res.stdout,
    `${list}:9: RayCluster ray/bad (items[1]): denied by the validating webhook: The RayCluster spec is invalid: worker group small has minReplicas 3 greater than maxReplicas 1\n`,
  );
  const yaml = await mutateCmd([list]);
  t.same(
    docs(yaml.stdout).map((d) => d.kind),
    ['ConfigMap'],
    'the admitted item printed, the denied one not',
  );
  // The API's own RayClusterList leaves its items' apiVersion and kind out.
  const typed = join(dir, 'typed-list.json');
  writeFileSync(typed, JSON.stringify({ apiVersion: 'ray.io/v1', kind: 'RayClusterList', metadata: {}, items: [docs(CLUSTER_YAML)[0]] }));
  const stored = await mutateCmd(['-o', 'json', typed]);
  t.equal(stored.code, 0);
  t.match(JSON.parse(stored.stdout), { apiVersion: 'ray.io/v1', kind: 'RayCluster', metadata: { finalizers: [FINALIZER] } });
});

t.test('no objects passed: an error, as kubectl says it', async (t) => {
  const empty = join(dir, 'empty');
  mkdirSync(empty, { recursive: true });
  const emptyList = join(dir, 'empty-list.yaml');
  writeFileSync(emptyList, 'apiVersion: v1\nkind: List\nitems: []\n---\n');
  for (const input of [empty, emptyList]) {
    for (const args of [[input], ['--check', input], ['--report', 'json', input]]) {
      const res = await mutateCmd(args);
      t.equal(res.code, 2, args.join(' '));
      t.match(res.stderr, /^raykeeper mutate: no objects passed$/m, args.join(' '));
    }
  }
});

t.test('the exit code is the same in every output mode; each finding printed once', async (t) => {
  const unreadable = join(dir, 'unreadable.yaml');
  writeFileSync(unreadable, 'kind: [broken\n');
  const denied = join(dir, 'denied.yaml');
  writeFileSync(denied, DENIED_YAML);
  const ok = join(tree(), 'cluster.yaml');
  const modes = [
    [],
    ['-o', 'json'],
    ['-o', 'patch'],
    ['-o', 'review'],
    ['--check'],
    ['--report', 'json'],
    ['--report', 'junit'],
    ['--report', 'github'],
  ];
  const cases: Array<{ name: string; args: string[]; code: number; finding?: RegExp }> = [
    { name: 'admitted', args: [ok], code: 0 },
    { name: 'denied', args: [ok, denied], code: 1, finding: /denied by the validating webhook: The RayCluster spec is invalid/ },
    { name: 'relies on defaults, asked', args: ['--fail-on-change', ok], code: 3, finding: /relies on the webhook's defaults/ },
    { name: 'unreadable, before denied', args: [denied, unreadable], code: 2, finding: /not valid YAML or JSON/ },
    { name: 'missing, before denied', args: [denied, join(dir, 'missing.yaml')], code: 2, finding: /ENOENT/ },
  ];
  for (const c of cases) {
    for (const mode of modes) {
      const res = await mutateCmd([...mode, ...c.args]);
      const name = `${c.name}, ${mode.join(' ') || '-o yaml'}`;
      t.equal(res.code, c.code, name);
      if (c.finding === undefined) continue;
      // The finding's text on one line of all that was printed (in JUnit, one <failure> or <error> element).
      const all = (res.stdout + res.stderr).replace(/&apos;/g, "'");
      const found = all.split('\n').filter((l) => c.finding!.test(l));
      t.equal(found.length, 1, `${name}: printed once`);
    }
  }
});
const tree = () => join(dir, 'tree');

t.test('--report github: annotations on the file and the line of each document', async (t) => {
  const file = join(dir, 'two.yaml');
  writeFileSync(file, `${CONFIGMAP_YAML}---\n${DENIED_YAML}`);
  const res = await mutateCmd(['--report', 'github', file]);
  t.equal(res.code, 1);
  t.equal(
    res.stdout,
    `::error file=${file},line=6,title=raykeeper mutate%3A RayCluster ray/bad::denied by the validating webhook: The RayCluster spec is invalid: worker group small has minReplicas 3 greater than maxReplicas 1\n`,
  );
  t.equal(res.stderr, 'raykeeper mutate: 2 objects in 1 file: 1 denied, 0 errors, 0 warnings (exit 1)\n');
  const junit = await mutateCmd(['--report', 'junit', file]);
  t.match(
    junit.stdout,
    /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<testsuites name="raykeeper mutate" tests="2" failures="1" errors="0">/,
  );
  const both = await mutateCmd(['--report', 'junit', '-o', 'yaml', file]);
  t.equal(both.code, 2);
  t.match(both.stderr, /-o prints the objects and --report \(or --check\) the findings instead: give one/);
  const wrong = await mutateCmd(['--report', 'sarif', file]);
  t.equal(wrong.code, 2);
  t.match(wrong.stderr, /--report must be one of text, json, junit, github, got "sarif"/);
});

t.test('--storage-namespace: refused when more than one GCS-FT cluster would share it', async (t) => {
  const two = join(dir, 'two-clusters.yaml');
  writeFileSync(two, `${CLUSTER_YAML}---\n${CLUSTER_YAML.replace('name: demo', 'name: demo2')}`);
  const res = await mutateCmd(['--storage-namespace', 'shared', two]);
  t.equal(res.code, 2);
  t.equal(res.stdout, '', 'nothing printed');
  t.match(
    res.stderr,
    /--storage-namespace shared would be pinned in 2 GCS-FT RayClusters \(.*two-clusters\.yaml:1 RayCluster ray\/demo, .*two-clusters\.yaml:15 RayCluster ray\/demo2\); clusters sharing a storage namespace lose each other's GCS data/,
  );
  const one = await mutateCmd(['--storage-namespace', 'mine', join(tree(), 'cluster.yaml'), join(tree(), 'nested', 'job.json')]);
  t.equal(one.code, 0, 'one cluster (and a RayJob) is fine');
  t.equal(docs(one.stdout)[0].metadata.annotations[NS_ANNOTATION], 'mine');
  const without = await mutateCmd([two]);
  t.equal(without.code, 0, 'without it, each gets its own');
  const [a, b] = docs(without.stdout);
  t.not(a.metadata.annotations[NS_ANNOTATION], b.metadata.annotations[NS_ANNOTATION]);
});
