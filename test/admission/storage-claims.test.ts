// Admission's storage-namespace check (src/admission/storage-claims.ts) through validate(): a table of
// CREATEs and UPDATEs against an index of other clusters, and what is refused, warned or let through.
import t from 'tap';
import { validate } from '../../src/admission/validate.ts';
import { ClaimIndex, claimEntry } from '../../src/gcsft/claims.ts';
import type { RayCluster } from '../../src/types.ts';
import type { JsonObject } from '../../kube/model.ts';
import { FINALIZER, FT, NS_ANNOTATION, rayCluster, review } from './fixtures.ts';

function other(namespace: string, name: string, address: string, storage: string, deleting = false): RayCluster {
  const c = rayCluster({
    annotations: { [FT]: 'true', [NS_ANNOTATION]: storage },
    headEnv: [{ name: 'RAY_REDIS_ADDRESS', value: address }],
    finalizers: [FINALIZER],
    uid: `uid-${name}`,
    ...(deleting ? { deletionTimestamp: '2026-11-30T10:00:00Z' } : {}),
  }) as unknown as RayCluster;
  c.metadata.namespace = namespace;
  c.metadata.name = name;
  return c;
}

const index = new ClaimIndex();
for (const c of [
  other('n1', 'a', 'redis.shared:6379', 'taken'),
  other('n1', 'gone', 'redis.shared:6379', 'leaving', true),
  other('n3', 'c', 'redis.shared', 'maybe-ns'),
])
  index.put(`${c.metadata.namespace}/${c.metadata.name}`, claimEntry(c));
const lookup = (claim: Parameters<typeof index.claimants>[0], self: string | undefined) => index.claimants(claim, self);

/** A GCS-FT RayCluster `demo` in namespace `ray` (the reviews'), options form. */
function mine(options: JsonObject): JsonObject {
  const c = rayCluster({ options, finalizers: [FINALIZER] });
  delete (c.metadata as JsonObject).namespace; // a CREATE's object may not carry it: the request's counts
  return c;
}

t.test('CREATE: refused when a live cluster holds the namespace on the same Redis, naming it', async (t) => {
  const out = validate(
    review('RayCluster', 'CREATE', mine({ redisAddress: 'redis://redis.shared.svc.cluster.local', externalStorageNamespace: 'taken' })),
    'RayCluster',
    {
      claims: lookup,
    },
  );
  t.equal(out.result, 'denied');
  t.equal(out.reason, 'storage_namespace_in_use');
  t.equal(out.answer.response.status?.code, 403);
  t.match(
    out.message,
    /^spec\.gcsFaultToleranceOptions\.externalStorageNamespace: storage namespace "taken" on Redis redis\.shared\.svc:6379 is already used by live RayCluster n1\/a: /,
  );
});

t.test('CREATE: refused while a cluster holding it is being deleted (its cleanup deletes the namespace)', async (t) => {
  const out = validate(
    review('RayCluster', 'CREATE', mine({ redisAddress: 'redis.shared:6379', externalStorageNamespace: 'leaving' })),
    'RayCluster',
    {
      claims: lookup,
    },
  );
  t.equal(out.result, 'denied');
  t.match(
    out.message,
    /storage namespace "leaving" on Redis redis\.shared\.svc:6379 is still held by being deleted RayCluster n1\/gone: .*once it is gone/,
  );
});

t.test('admitted: another Redis, another namespace, a short name of another namespace, or no lookup', async (t) => {
  const cases: Array<[string, JsonObject]> = [
    ['another Redis (port)', mine({ redisAddress: 'redis.shared:6380', externalStorageNamespace: 'taken' })],
    ["'redis' in namespace ray is not redis.shared", mine({ redisAddress: 'redis', externalStorageNamespace: 'taken' })],
    ['another storage namespace', mine({ redisAddress: 'redis.shared', externalStorageNamespace: 'free' })],
  ];
  for (const [why, obj] of cases)
    t.equal(validate(review('RayCluster', 'CREATE', obj), 'RayCluster', { claims: lookup }).result, 'allowed', why);
  t.equal(
    validate(review('RayCluster', 'CREATE', mine({ redisAddress: 'redis.shared', externalStorageNamespace: 'taken' })), 'RayCluster')
      .result,
    'allowed',
    'no lookup (raykeeper mutate offline, or the cache not synced): not checked',
  );
});

t.test("'maybe' (the new cluster's Redis is not known here): admitted with a warning naming the other", async (t) => {
  const annotationForm = rayCluster({ annotations: { [FT]: 'true', [NS_ANNOTATION]: 'maybe-ns' }, finalizers: [FINALIZER] });
  ((annotationForm.spec as any).headGroupSpec.template.spec.containers[0] as JsonObject).envFrom = [{ secretRef: { name: 'redis-env' } }];
  const warned = validate(review('RayCluster', 'CREATE', annotationForm), 'RayCluster', { claims: lookup });
  t.equal(warned.result, 'warned');
  t.match(
    warned.warnings.join('\n'),
    /storage namespace "maybe-ns" on Redis \(not known here\) is also the storage namespace of live RayCluster n3\/c/,
  );
});

t.test('UPDATE: refused only when it makes a new claim; keeping its claim passes (no new sharing)', async (t) => {
  const old = mine({ redisAddress: 'redis.shared', externalStorageNamespace: 'taken' });
  const scaled = structuredClone(old);
  ((scaled.spec as any).workerGroupSpecs[0] as JsonObject).replicas = 3;
  t.equal(
    validate(review('RayCluster', 'UPDATE', scaled, old), 'RayCluster', { claims: lookup }).result,
    'allowed',
    'a scale of a cluster that already shares',
  );
  const ftOff = rayCluster({ finalizers: [FINALIZER] });
  const ftOn = rayCluster({
    annotations: { [FT]: 'true', [NS_ANNOTATION]: 'taken' },
    headEnv: [{ name: 'RAY_REDIS_ADDRESS', value: 'redis.shared' }],
    finalizers: [FINALIZER],
  });
  const turnedOn = validate(review('RayCluster', 'UPDATE', ftOn, ftOff), 'RayCluster', { claims: lookup });
  t.equal(turnedOn.result, 'denied', 'FT turned on onto a held namespace');
  t.match(turnedOn.message, /metadata\.annotations\[ray\.io\/external-storage-namespace\]: storage namespace "taken"/);
  const self = other('n1', 'a', 'redis.shared:6379', 'taken');
  const selfEdit = structuredClone(self) as unknown as JsonObject;
  (selfEdit.metadata as JsonObject).labels = { team: 'x' };
  ((selfEdit.spec as any).workerGroupSpecs[0] as JsonObject).replicas = 2;
  t.equal(
    validate(review('RayCluster', 'UPDATE', selfEdit, self, { namespace: 'n1', name: 'a' }), 'RayCluster', { claims: lookup }).result,
    'allowed',
    'the holder itself',
  );
});
