import t from 'tap';
import {
  deletionTimeoutProblem,
  deletionTimeoutSeconds,
  gcsFtFinalizerRule,
  gcsFtMode,
  heldFinalizer,
  isGcsFtEnabled,
  redisCleanupEnabled,
  storageNamespace,
  storageNamespaceProblem,
  usesRedisBackend,
  type FtSubject,
} from '../../src/gcsft/rules.ts';

const withAnnotations = (annotations: Record<string, string> | null, spec: FtSubject['spec'] = {}): FtSubject => ({
  metadata: { name: 'c', annotations, uid: 'uid-1' },
  spec,
});

t.test('isGcsFtEnabled / gcsFtMode / usesRedisBackend', async (t) => {
  const rows: Array<[string, FtSubject, boolean, string, boolean]> = [
    ['no metadata at all', {}, false, 'off', false],
    ['annotations null', withAnnotations(null), false, 'off', false],
    ['annotation "true"', withAnnotations({ 'ray.io/ft-enabled': 'true' }), true, 'annotation', true],
    ['annotation "TRUE"', withAnnotations({ 'ray.io/ft-enabled': 'TRUE' }), true, 'annotation', true],
    ['annotation "false"', withAnnotations({ 'ray.io/ft-enabled': 'false' }), false, 'off', false],
    ['annotation "yes" is not true', withAnnotations({ 'ray.io/ft-enabled': 'yes' }), false, 'off', false],
    ['options {}', withAnnotations(null, { gcsFaultToleranceOptions: {} }), true, 'options', true],
    ['options null', withAnnotations(null, { gcsFaultToleranceOptions: null }), false, 'off', false],
    ['options redis', withAnnotations(null, { gcsFaultToleranceOptions: { backend: 'redis' } }), true, 'options', true],
    ['options rocksdb', withAnnotations(null, { gcsFaultToleranceOptions: { backend: 'rocksdb' } }), true, 'options', false],
    ['both', withAnnotations({ 'ray.io/ft-enabled': 'true' }, { gcsFaultToleranceOptions: {} }), true, 'both', true],
  ];
  for (const [name, obj, enabled, mode, redis] of rows) {
    t.equal(isGcsFtEnabled(obj), enabled, `${name}: enabled`);
    t.equal(gcsFtMode(obj), mode, `${name}: mode`);
    t.equal(usesRedisBackend(obj), redis, `${name}: redis backend`);
  }
});

t.test('storageNamespace precedence: options > annotation > UID', async (t) => {
  const ann = { 'ray.io/external-storage-namespace': 'from-annotation' };
  t.equal(storageNamespace(withAnnotations(null)), 'uid-1');
  t.equal(storageNamespace(withAnnotations(ann)), 'from-annotation');
  t.equal(
    storageNamespace(withAnnotations(ann, { gcsFaultToleranceOptions: { externalStorageNamespace: 'from-options' } })),
    'from-options',
  );
  t.equal(storageNamespace(withAnnotations({ 'ray.io/external-storage-namespace': '' })), 'uid-1', 'empty annotation ignored');
  t.equal(storageNamespace({ metadata: { name: 'x' } }), undefined, 'no UID yet (CREATE admission)');
});

t.test('storageNamespaceProblem', async (t) => {
  t.equal(storageNamespaceProblem('abc-123'), undefined);
  t.match(storageNamespaceProblem('a@b'), /'@'/);
  t.match(storageNamespaceProblem(''), /empty/);
});

t.test('deletionTimeoutSeconds: positive integers only, else 300', async (t) => {
  const rows: Array<[string | undefined, number]> = [
    [undefined, 300],
    ['60', 60],
    ['0', 300],
    ['-5', 300],
    ['abc', 300],
    ['1.5', 300],
    [' 42 ', 42],
    ['604800', 604800],
    ['604801', 300],
    ['99999999999999999999', 300],
  ];
  for (const [value, want] of rows) {
    const obj = withAnnotations(value === undefined ? {} : { 'ray.io/gcs-ft-deletion-timeout': value });
    t.equal(deletionTimeoutSeconds(obj), want, `annotation ${JSON.stringify(value)}`);
    // Every value not used as given is reported (the controller turns it into a Warning event).
    const problem = deletionTimeoutProblem(obj);
    if (value === undefined || String(want) === value.trim()) t.equal(problem, undefined, `${JSON.stringify(value)} is fine`);
    else t.match(problem, /is not a whole number of seconds in 1-604800; using 300/, `${JSON.stringify(value)} is reported`);
  }
});

t.test('redisCleanupEnabled: on unless "false"', async (t) => {
  t.equal(redisCleanupEnabled(undefined), true);
  t.equal(redisCleanupEnabled(''), true);
  t.equal(redisCleanupEnabled('true'), true);
  t.equal(redisCleanupEnabled('FALSE'), false);
  t.equal(redisCleanupEnabled('false'), false);
  t.equal(redisCleanupEnabled('0'), true);
});

t.test('gcsFtFinalizerRule: one rule for the webhook and the controller, the both-set case included', async (t) => {
  const on = { 'ray.io/ft-enabled': 'true' };
  const options = { gcsFaultToleranceOptions: { redisAddress: 'redis:6379' } };
  const rows: Array<[string, FtSubject, boolean]> = [
    ['annotation', withAnnotations(on), true],
    ['options', withAnnotations(null, options), true],
    ['both set (KubeRay rejects it)', withAnnotations(on, options), false],
    ['off', withAnnotations(null), false],
    ['rocksdb', withAnnotations(null, { gcsFaultToleranceOptions: { backend: 'rocksdb' } }), false],
    ['managed by MultiKueue', withAnnotations(on, { managedBy: 'kueue.x-k8s.io/multikueue' }), false],
  ];
  for (const [name, obj, wanted] of rows) {
    const rule = gcsFtFinalizerRule(obj);
    t.equal(rule.wanted, wanted, name);
    if (!rule.wanted) t.match(rule.reason, /\S/, `${name}: says why`);
  }
});

t.test('heldFinalizer: only a deleting cluster our finalizer holds, with its age and timeout', async (t) => {
  const now = Date.parse('2026-12-04T10:05:00Z');
  const meta = (m: Record<string, unknown>): FtSubject => ({ metadata: { name: 'c', ...m } });
  const ours = ['other.io/keep', 'ray.io/gcs-ft-redis-cleanup-finalizer'];
  t.equal(heldFinalizer(meta({ finalizers: ours }), now), undefined, 'not deleting');
  t.equal(heldFinalizer(meta({ deletionTimestamp: '2026-12-04T10:00:00Z', finalizers: ['other.io/keep'] }), now), undefined, 'not ours');
  t.equal(heldFinalizer(meta({ deletionTimestamp: '2026-12-04T10:00:00Z' }), now), undefined, 'no finalizers');
  t.same(heldFinalizer(meta({ deletionTimestamp: '2026-12-04T10:00:00Z', finalizers: ours }), now), {
    heldSeconds: 300,
    timeoutSeconds: 300,
  });
  t.same(
    heldFinalizer(
      meta({ deletionTimestamp: '2026-12-04T10:04:30Z', finalizers: ours, annotations: { 'ray.io/gcs-ft-deletion-timeout': '900' } }),
      now,
    ),
    { heldSeconds: 30, timeoutSeconds: 900 },
  );
  t.equal(heldFinalizer(meta({ deletionTimestamp: 'not a time', finalizers: ours }), now), undefined, 'unreadable timestamp');
});
