// `raykeeper mutate` on real files, directories and stdin: defaulted objects, patches and review answers
// from the same code as the server (a review answered by the command equals the server's answer), --check
// for CI, non-Ray objects untouched, a malformed document reported with its file and number while the
// others are still processed.
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
    t.match(res.stderr, new RegExp(`${mixed.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: document 3: not valid YAML or JSON`));
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

t.test('--check: one line per object that would change, exit 1; its own output checks clean (exit 0)', async (t) => {
  const tree = join(dir, 'tree');
  const res = await mutateCmd(['--check', tree]);
  t.equal(res.code, 1);
  const lines = res.stdout.trim().split('\n');
  t.equal(lines.length, 2, res.stdout);
  t.match(
    lines[0],
    /tree\/cluster\.yaml#1 RayCluster ray\/demo: would be changed by the webhook: added finalizer ray\.io\/gcs-ft-redis-cleanup-finalizer; pinned storage namespace/,
  );
  t.match(lines[1], /tree\/nested\/job\.json#1 RayJob ray\/job: would be changed by the webhook: set status\.jobDeploymentStatus New/);
  t.equal(res.stderr, '', 'README.md in the directory is not read');

  const defaulted = await mutateCmd([tree]);
  t.equal(defaulted.code, 0);
  const stored = join(dir, 'stored.yaml');
  writeFileSync(stored, defaulted.stdout);
  const again = await mutateCmd(['--check', stored]);
  t.equal(again.code, 0, 'what the webhook stores needs no webhook');
  t.equal(again.stdout, '');
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

t.test("-o review of an AdmissionReview file equals the server's answer to the same body", async (t) => {
  const body = review(
    'RayCluster',
    'CREATE',
    rayCluster({ annotations: { [FT]: 'true', [NS_ANNOTATION]: 'theirs' }, finalizers: ['example.com/keep'] }),
  );
  const file = join(dir, 'review.json');
  writeFileSync(file, JSON.stringify(body));
  const res = await mutateCmd(['-o', 'review', file]);
  t.equal(res.code, 0);
  const certs = await certDir(t);
  const app = await buildApp({
    certFile: certs.certFile,
    keyFile: certs.keyFile,
    logger: capturingLogger().logger,
    finalizerEnabled: true,
  });
  t.teardown(() => app.close());
  const server = await app.inject({
    method: 'POST',
    url: '/mutate-ray-io-v1-raycluster',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
  t.same(JSON.parse(res.stdout), server.json(), 'the same answer, patch included');
  t.ok(server.json().response.patch, 'and it carries a patch');

  const patch = await mutateCmd(['-o', 'patch', file]);
  t.same(JSON.parse(patch.stdout).patch, JSON.parse(Buffer.from(server.json().response.patch, 'base64').toString()));
});

t.test('a document the webhook would refuse: exit 2 with the reason; its refusal in -o review', async (t) => {
  const file = join(dir, 'refused.yaml');
  writeFileSync(
    file,
    `${CLUSTER_YAML.replace('spec:\n', 'spec:\n  gcsFaultToleranceOptions: {backend: {toString: x}}\n')}---\n${CONFIGMAP_YAML}`,
  );
  const res = await mutateCmd([file]);
  t.equal(res.code, 2);
  t.match(
    res.stderr,
    /document 1: RayCluster ray\/demo: the webhook would refuse it: object\.spec\.gcsFaultToleranceOptions\.backend must be a string/,
  );
  t.equal(docs(res.stdout).length, 1, 'the ConfigMap is still printed');
  const answers = (await mutateCmd(['-o', 'review', file])).stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  t.equal(answers[0].response.allowed, false);
  t.equal(answers[0].response.status.code, 400);
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
      .map((l) => l.replace(/#.*/, '').replace(`${dir}/`, ''));
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
  t.match(url.stderr, /https:\/\/example\.com\/x\.yaml: URLs are not read/);
  const twice = await mutateCmd(['-f', '-', '-']);
  t.equal(twice.code, 2);
  t.match(twice.stderr, /stdin\) can be given only once/);
  const none = await mutateCmd(['--check']);
  t.equal(none.code, 2);
  t.match(none.stderr, /give at least one -f FILE\|DIR\|-/);
});

t.test('through the binary: stdin with -, usage errors exit 2', async (t) => {
  const res = spawnSync(process.execPath, [BIN, 'mutate', '--check', '-'], { input: CLUSTER_YAML, encoding: 'utf8', timeout: 30_000 });
  t.equal(res.status, 1);
  t.match(res.stdout, /^\(stdin\)#1 RayCluster ray\/demo: would be changed/);
  const dashF = spawnSync(process.execPath, [BIN, 'mutate', '--check', '-f', '-'], {
    input: CLUSTER_YAML,
    encoding: 'utf8',
    timeout: 30_000,
  });
  t.equal(dashF.status, 1, "kubectl's -f - reads stdin");
  t.match(dashF.stdout, /^\(stdin\)#1 RayCluster ray\/demo: would be changed/);
  const bad = spawnSync(process.execPath, [BIN, 'mutate', '-o', 'xml', '-'], { input: '', encoding: 'utf8', timeout: 30_000 });
  t.equal(bad.status, 2);
  t.match(bad.stderr, /-o must be one of yaml, json, patch, review/);
  const none = spawnSync(process.execPath, [BIN, 'mutate'], { encoding: 'utf8', timeout: 30_000 });
  t.equal(none.status, 2);
  const missing = spawnSync(process.execPath, [BIN, 'mutate', join(dir, 'nope.yaml')], { encoding: 'utf8', timeout: 30_000 });
  t.equal(missing.status, 2);
  t.match(missing.stderr, /nope\.yaml: ENOENT/);
  const help = spawnSync(process.execPath, [BIN, '--help'], { encoding: 'utf8', timeout: 30_000 });
  t.match(help.stdout, /^\s+mutate\s+\S/m);
});

t.test('--check reports what the validating webhook would deny (exit 1) and its warnings (stderr)', async (t) => {
  const invalid = join(dir, 'invalid.yaml');
  writeFileSync(
    invalid,
    `apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: bad, namespace: ray}
spec:
  headGroupSpec:
    template: {spec: {containers: [{name: ray-head, image: "rayproject/ray:2.41.0"}]}}
  workerGroupSpecs:
    - groupName: small
      minReplicas: 3
      maxReplicas: 1
      template: {spec: {containers: [{name: ray-worker}]}}
`,
  );
  const res = await mutateCmd(['--check', invalid]);
  t.equal(res.code, 1);
  t.match(
    res.stdout,
    /invalid.yaml#1 RayCluster ray\/bad: would be denied by the webhook: The RayCluster spec is invalid: worker group small has minReplicas 3 greater than maxReplicas 1/,
  );
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
  t.equal(ok.code, 0, 'a warning alone is not a finding');
  t.equal(ok.stdout, '');
  t.match(
    ok.stderr,
    /warned.yaml: document 1: RayCluster ray\/warned: warning: spec.autoscalerOptions is set but spec.enableInTreeAutoscaling is not true/,
  );

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
  t.match((await mutateCmd(['--check', ingress])).stderr, /does not act on spec.headGroupSpec.enableIngress/, 'standalone: noted');
  const companion = await mutateCmd(['--check', '--companion', 'on', ingress]);
  t.equal(companion.code, 0);
  t.equal(companion.stderr, '', 'companion: nothing to say');
  const wrong = await mutateCmd(['--check', '--companion', 'auto', ingress]);
  t.equal(wrong.code, 2);
  t.match(wrong.stderr, /--companion must be on or off, got "auto"/);
});
