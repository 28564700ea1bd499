// The pure decisions of `raykeeper mutate` as a CI gate (webhook/gate.ts, webhook/offline.ts): Lists
// read as kubectl reads them, where each object is (line, List item), which findings an object has, what
// "relies on the webhook's defaults" leaves out, and the one exit code of a run.
import t from 'tap';
import { counterNamespaces } from '../admission/fixtures.ts';
import {
  committedStorageNamespaceWarning,
  expandLists,
  mutateDocument,
  readDocuments,
  type DocumentResult,
  type ObjectResult,
} from '../../webhook/offline.ts';
import {
  checkResult,
  describeOperation,
  EXIT_CODES,
  reliedDefaults,
  sharedPinnedNamespace,
  sourceError,
  summarize,
  type Check,
  type FindingType,
} from '../../webhook/gate.ts';

const head = '{headGroupSpec: {rayStartParams: {}, template: {spec: {containers: [{name: ray-head, image: "rayproject/ray:2.46.0"}]}}}}';
const ftCluster = (name: string, extra = '') =>
  `apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: ${name}, namespace: ml, annotations: {ray.io/ft-enabled: "true"${extra}}}\nspec: ${head}\n`;
const deniedCluster = (name: string) =>
  `apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: ${name}, namespace: ml}\nspec: {headGroupSpec: {template: {spec: {containers: [{name: ray-head}]}}}, workerGroupSpecs: [{groupName: g, minReplicas: 3, maxReplicas: 1, template: {spec: {containers: [{name: w}]}}}]}\n`;

function results(source: string, yaml: string): DocumentResult[] {
  const options = { newStorageNamespace: counterNamespaces(), finalizerEnabled: true };
  return readDocuments(source, yaml).map((d) =>
    'error' in d ? { ...d, kind: 'error' as const, message: d.error } : mutateDocument(d, d.value, options),
  );
}
const object = (source: string, yaml: string) => {
  const [r] = results(source, yaml);
  if (r?.kind !== 'object') throw new Error(`not an object: ${JSON.stringify(r)}`);
  return r;
};

t.test('expandLists: kubectl reads a v1 List and any <Kind>List as their items', async (t) => {
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } };
  const cases: Array<{ name: string; value: unknown; want: unknown }> = [
    { name: 'a plain object', value: cm, want: [{ path: [], value: cm }] },
    {
      name: 'a v1 List',
      value: { apiVersion: 'v1', kind: 'List', items: [cm, cm] },
      want: [
        { path: [0], value: cm },
        { path: [1], value: cm },
      ],
    },
    { name: 'an empty List: no objects', value: { apiVersion: 'v1', kind: 'List', items: [] }, want: [] },
    {
      name: "the API's RayClusterList: items get the List's apiVersion and <Kind>",
      value: { apiVersion: 'ray.io/v1', kind: 'RayClusterList', metadata: {}, items: [{ metadata: { name: 'x' } }] },
      want: [{ path: [0], value: { apiVersion: 'ray.io/v1', kind: 'RayCluster', metadata: { name: 'x' } } }],
    },
    {
      name: 'an item that names itself keeps its own apiVersion and kind',
      value: { apiVersion: 'ray.io/v1', kind: 'RayClusterList', items: [cm] },
      want: [{ path: [0], value: cm }],
    },
    {
      name: 'nested Lists',
      value: { apiVersion: 'v1', kind: 'List', items: [cm, { apiVersion: 'v1', kind: 'List', items: [cm] }] },
      want: [
        { path: [0], value: cm },
        { path: [1, 0], value: cm },
      ],
    },
    {
      name: 'items that are not a list',
      value: { apiVersion: 'v1', kind: 'List', items: {} },
      want: [{ path: [], error: 'List: items must be a list' }],
    },
    {
      name: 'a kind ending in List without items is an object like any other',
      value: { apiVersion: 'example.com/v1', kind: 'AllowList', spec: {} },
      want: [{ path: [], value: { apiVersion: 'example.com/v1', kind: 'AllowList', spec: {} } }],
    },
    { name: 'not an object', value: 'text', want: [{ path: [], value: 'text' }] },
  ];
  for (const c of cases) t.same(expandLists(c.value), c.want, c.name);
});

t.test('readDocuments: each object with its line and List item; a broken document with its line', async (t) => {
  const yaml = [
    '# leading comment',
    'apiVersion: v1', // line 2
    'kind: ConfigMap',
    'metadata: {name: a}',
    '---',
    '---', // empty document 2
    'apiVersion: v1', // line 7
    'kind: List',
    'items:',
    '  - apiVersion: v1', // line 10
    '    kind: ConfigMap',
    '    metadata: {name: b}',
    '  - apiVersion: v1', // line 13
    '    kind: ConfigMap',
    '    metadata: {name: c}',
    '---',
    'kind: [broken', // line 17
    '',
  ].join('\n');
  const docs = readDocuments('in.yaml', yaml);
  t.same(
    docs.map((d) => ({ document: d.document, line: d.line, item: d.item, error: 'error' in d })),
    [
      { document: 1, line: 2, item: undefined, error: false },
      { document: 3, line: 10, item: 'items[0]', error: false },
      { document: 3, line: 13, item: 'items[1]', error: false },
      { document: 4, line: 17, item: undefined, error: true },
    ],
  );
  t.match(docs[3], { error: /^not valid YAML or JSON/ });
  const json = readDocuments(
    'in.json',
    '{\n  "apiVersion": "v1",\n  "kind": "List",\n  "items": [\n    {"apiVersion": "v1", "kind": "ConfigMap"}\n  ]\n}\n',
  );
  t.same(
    json.map((d) => [d.line, d.item]),
    [[5, 'items[0]']],
    'JSON too',
  );
});

t.test('findings: refused and denied objects, changes only when asked, warnings never fail', async (t) => {
  const types = (c: Check) => c.findings.map((f) => f.type);
  const cases: Array<{ name: string; yaml: string; failOnChange: boolean; want: FindingType[]; text?: RegExp }> = [
    { name: 'a GCS-FT cluster the webhook defaults', yaml: ftCluster('a'), failOnChange: false, want: [] },
    {
      name: 'the same with --fail-on-change: the finalizer, not the pinned namespace',
      yaml: ftCluster('a'),
      failOnChange: true,
      want: ['changed'],
      text: /^relies on the webhook's defaults: metadata\.finalizers = \["ray\.io\/gcs-ft-redis-cleanup-finalizer"\]$/,
    },
    {
      name: 'a cluster carrying the finalizer: only the warning about its pinned namespace',
      yaml: ftCluster('a', ', ray.io/external-storage-namespace: fixed').replace(
        'metadata: {',
        'metadata: {finalizers: [ray.io/gcs-ft-redis-cleanup-finalizer], ',
      ),
      failOnChange: true,
      want: ['warning'],
      text: /the manifest pins storage namespace "fixed" in annotation ray\.io\/external-storage-namespace: it is copied with the file/,
    },
    {
      name: 'a RayJob: its status is not asked of a manifest, its submissionMode is',
      yaml: 'apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {name: j, namespace: ml}\nspec: {entrypoint: x, clusterSelector: {ray.io/cluster: c}}\n',
      failOnChange: true,
      want: ['changed'],
      text: /^relies on the webhook's defaults: spec\.submissionMode = K8sJobMode; spec\.backoffLimit = 0; spec\.ttlSecondsAfterFinished = 0$/,
    },
    {
      name: 'denied by the validating webhook (a change is not reported beside it)',
      yaml: deniedCluster('bad'),
      failOnChange: true,
      want: ['denied'],
      text: /^denied by the validating webhook: The RayCluster spec is invalid: worker group g has minReplicas 3 greater than maxReplicas 1/,
    },
    {
      name: 'refused by the mutating webhook',
      yaml: ftCluster('r').replace('spec: {', 'spec: {gcsFaultToleranceOptions: {backend: [x]}, '),
      failOnChange: false,
      want: ['denied'],
      text: /^refused by the mutating webhook: object\.spec\.gcsFaultToleranceOptions\.backend must be a string/,
    },
    { name: 'not a Kubernetes object', yaml: '- a\n- b\n', failOnChange: false, want: ['error'], text: /^error: not a Kubernetes object/ },
    { name: 'a ConfigMap passes', yaml: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n', failOnChange: true, want: [] },
  ];
  for (const c of cases) {
    const [result] = results('in.yaml', c.yaml);
    const check = checkResult(result!, { failOnChange: c.failOnChange });
    t.same(types(check), c.want, c.name);
    if (c.text) t.match(check.findings[0]?.text, c.text, `${c.name}: text`);
  }
});

t.test('reliedDefaults: status and the pinned namespace left out, whatever the FT form', async (t) => {
  const annotation = object('a.yaml', ftCluster('a'));
  const options = object(
    'o.yaml',
    `apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: o}\nspec: {gcsFaultToleranceOptions: {redisAddress: "r:6379"}, ${head.slice(1)}\n`,
  );
  for (const r of [annotation, options]) {
    t.ok(r.pinnedStorageNamespace, `${r.label}: a namespace was pinned`);
    t.equal(r.patch.length, 2, `${r.label}: the finalizer and the namespace`);
    t.same(
      reliedDefaults(r).map((op) => op.path),
      ['/metadata/finalizers'],
      `${r.label}: only the finalizer is relied on`,
    );
  }
  // A namespace the user set to "" is replaced by the webhook's: still its pin, not a default to commit.
  const empty = object('e.yaml', ftCluster('e', ', ray.io/external-storage-namespace: ""'));
  t.same(
    reliedDefaults(empty).map((op) => op.path),
    ['/metadata/finalizers'],
  );
  // Without a pin (the manifest has its namespace), a write at that path would be relied on.
  t.same(reliedDefaults({ patch: [{ op: 'add', path: '/spec/gcsFaultToleranceOptions/externalStorageNamespace', value: 'x' }] }).length, 1);
});

t.test('describeOperation', async (t) => {
  const cases: Array<[Parameters<typeof describeOperation>[0], string]> = [
    [{ op: 'add', path: '/metadata/finalizers/-', value: 'f' }, 'metadata.finalizers += f'],
    [{ op: 'add', path: '/metadata/finalizers/2', value: 'f' }, 'metadata.finalizers += f'],
    [{ op: 'add', path: '/metadata/finalizers', value: ['f'] }, 'metadata.finalizers = ["f"]'],
    [{ op: 'replace', path: '/spec/submissionMode', value: 'K8sJobMode' }, 'spec.submissionMode = K8sJobMode'],
    [{ op: 'add', path: '/metadata/annotations/ray.io~1x~0y', value: 'v' }, 'metadata.annotations["ray.io/x~y"] = v'],
    [{ op: 'add', path: '/spec/successfulJobsHistoryLimit', value: 3 }, 'spec.successfulJobsHistoryLimit = 3'],
    [{ op: 'remove', path: '/spec/x' }, 'spec.x removed'],
  ];
  for (const [op, want] of cases) t.equal(describeOperation(op), want, want);
});

t.test('committedStorageNamespaceWarning: a namespace a manifest pins, in any of its three places', async (t) => {
  const base = { apiVersion: 'ray.io/v1', kind: 'RayCluster', metadata: { name: 'c', annotations: { 'ray.io/ft-enabled': 'true' } } };
  const container = (env: unknown[]) => ({ headGroupSpec: { template: { spec: { containers: [{ name: 'ray-head', env }] } } } });
  const cases: Array<{ name: string; manifest: Record<string, unknown>; want: RegExp | undefined }> = [
    { name: 'none pinned', manifest: base, want: undefined },
    {
      name: 'the annotation',
      manifest: {
        ...base,
        metadata: { ...base.metadata, annotations: { ...base.metadata.annotations, 'ray.io/external-storage-namespace': 'n1' } },
      },
      want: /"n1" in annotation ray\.io\/external-storage-namespace/,
    },
    {
      name: 'the options',
      manifest: {
        ...base,
        metadata: { name: 'c' },
        spec: { gcsFaultToleranceOptions: { redisAddress: 'r', externalStorageNamespace: 'n2' } },
      },
      want: /"n2" in spec\.gcsFaultToleranceOptions\.externalStorageNamespace/,
    },
    {
      name: "the head container's env",
      manifest: { ...base, spec: container([{ name: 'RAY_external_storage_namespace', value: 'n3' }]) },
      want: /env RAY_external_storage_namespace of the head container/,
    },
    {
      name: 'FT off: nothing in Redis to share',
      manifest: { ...base, metadata: { name: 'c', annotations: { 'ray.io/external-storage-namespace': 'n4' } } },
      want: undefined,
    },
    {
      name: 'rocksdb: nothing in Redis to share',
      manifest: {
        ...base,
        metadata: { name: 'c' },
        spec: { gcsFaultToleranceOptions: { backend: 'rocksdb', externalStorageNamespace: 'n5' } },
      },
      want: undefined,
    },
  ];
  for (const c of cases) {
    const warning = committedStorageNamespaceWarning(c.manifest as never);
    if (c.want === undefined) t.equal(warning, undefined, c.name);
    else t.match(warning, c.want, c.name);
  }
});

t.test('summarize: the exit code, whatever is printed', async (t) => {
  const ok = object('a.yaml', ftCluster('a'));
  const denied = object('b.yaml', deniedCluster('b'));
  const warned = object('c.yaml', ftCluster('c', ', ray.io/external-storage-namespace: fixed'));
  const check = (r: DocumentResult, failOnChange = false) => checkResult(r, { failOnChange });
  const unreadable = sourceError('missing.yaml', 'ENOENT');
  const cases: Array<{ name: string; checks: Check[]; want: number }> = [
    { name: 'all admitted', checks: [check(ok)], want: EXIT_CODES.ok },
    { name: 'warnings do not fail', checks: [check(warned)], want: EXIT_CODES.ok },
    { name: 'one denied', checks: [check(ok), check(denied)], want: EXIT_CODES.denied },
    { name: 'changes fail only when asked', checks: [check(ok, true)], want: EXIT_CODES.changed },
    { name: 'denied before changed', checks: [check(ok, true), check(denied, true)], want: EXIT_CODES.denied },
    { name: 'unreadable before denied', checks: [check(denied), unreadable], want: EXIT_CODES.error },
    { name: 'unreadable before changed', checks: [check(ok, true), unreadable], want: EXIT_CODES.error },
    { name: 'no objects passed', checks: [], want: EXIT_CODES.error },
  ];
  for (const c of cases) t.equal(summarize(c.checks).exitCode, c.want, c.name);
  t.same(summarize([check(ok, true), check(denied), check(warned), unreadable]), {
    files: 4,
    objects: 3,
    denied: 1,
    changed: 1,
    errors: 1,
    warnings: 1,
    exitCode: EXIT_CODES.error,
  });
  t.same(Object.values(EXIT_CODES).sort(), [0, 1, 2, 3], 'four distinct codes');
});

t.test('sharedPinnedNamespace: more than one cluster would get the same pinned namespace', async (t) => {
  const two = results('two.yaml', `${ftCluster('a')}---\n${ftCluster('b')}`);
  t.same(
    sharedPinnedNamespace(two).map((r) => r.label),
    ['RayCluster ml/a', 'RayCluster ml/b'],
  );
  const oneAndOwn = results('own.yaml', `${ftCluster('a')}---\n${ftCluster('b', ', ray.io/external-storage-namespace: own')}`);
  t.same(sharedPinnedNamespace(oneAndOwn), [], 'a cluster with its own namespace gets none');
  t.same(sharedPinnedNamespace(results('one.yaml', ftCluster('a'))), []);
  const r = two[0] as ObjectResult;
  t.ok(r.pinnedStorageNamespace);
});
