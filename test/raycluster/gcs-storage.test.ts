// Embedded GCS storage's pure parts (src/raycluster/gcs-storage.ts) and KubeRay v1.7's rules for it
// (src/raycluster/validation.ts), as tables.
import t from 'tap';
import {
  desiredGcsStorageClaim,
  gcsStorageClaimConflict,
  gcsStorageClaimDrift,
  gcsStorageClaimName,
  retainedGcsStorageClaims,
  usesEmbeddedGcsStorage,
  type ClaimView,
} from '../../src/raycluster/gcs-storage.ts';
import { validateRayClusterSpec } from '../../src/raycluster/validation.ts';
import type { RayCluster } from '../../src/types.ts';

function cluster(options: unknown, head: Record<string, unknown> = {}, volumes?: unknown[]): RayCluster {
  return {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: { name: 'rc', namespace: 'ns', uid: 'u' },
    spec: {
      gcsFaultToleranceOptions: options,
      headGroupSpec: {
        rayStartParams: {},
        template: { spec: { containers: [{ name: 'ray-head', image: 'ray', ...head }], ...(volumes ? { volumes } : {}) } },
      },
      workerGroupSpecs: [],
    },
  } as unknown as RayCluster;
}

const owner = [{ apiVersion: 'ray.io/v1', kind: 'RayCluster', name: 'rc', uid: 'u', controller: true, blockOwnerDeletion: true }];

t.test('the operator-managed claim: name, defaults, owner per deletionPolicy; none for claimName or Redis', async (t) => {
  const rows: Array<[string, unknown, unknown]> = [
    ['Redis (no backend)', { redisAddress: 'r:6379' }, undefined],
    ['backend redis', { backend: 'redis', redisAddress: 'r:6379' }, undefined],
    [
      'rocksdb, no storage: 1Gi, ReadWriteOnce, owned',
      { backend: 'rocksdb' },
      { name: 'rc-gcs-pvc', owned: owner, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
    ],
    [
      'size, class, access modes',
      { backend: 'rocksdb', storage: { size: '5Gi', storageClassName: 'fast', accessModes: ['ReadWriteMany'] } },
      {
        name: 'rc-gcs-pvc',
        owned: owner,
        spec: { accessModes: ['ReadWriteMany'], resources: { requests: { storage: '5Gi' } }, storageClassName: 'fast' },
      },
    ],
    [
      'DeleteWithCluster: owned',
      { backend: 'rocksdb', storage: { deletionPolicy: 'DeleteWithCluster' } },
      { name: 'rc-gcs-pvc', owned: owner, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
    ],
    [
      'Retain: no owner',
      { backend: 'rocksdb', storage: { deletionPolicy: 'Retain' } },
      { name: 'rc-gcs-pvc', owned: undefined, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
    ],
    ['claimName: the user owns it', { backend: 'rocksdb', storage: { claimName: 'mine', deletionPolicy: 'Retain' } }, undefined],
  ];
  for (const [name, options, want] of rows) {
    const claim = desiredGcsStorageClaim(cluster(options));
    t.same(claim && { name: claim.metadata.name, owned: claim.metadata.ownerReferences, spec: claim.spec }, want, name);
    if (claim) t.same(claim.metadata.labels, { 'ray.io/cluster': 'rc' }, `${name}: labelled`);
  }
  t.equal(gcsStorageClaimName(cluster({ backend: 'rocksdb', storage: { claimName: 'mine' } })), 'mine');
  t.equal(gcsStorageClaimName(cluster({ backend: 'rocksdb', storage: { claimName: '' } })), 'rc-gcs-pvc');
  t.equal(usesEmbeddedGcsStorage(cluster(null)), false, 'FT off');
  t.equal(usesEmbeddedGcsStorage(cluster({ backend: 'rocksdb' })), true);
});

t.test("KubeRay v1.7's embedded-storage rules, its messages", async (t) => {
  const rows: Array<[string, RayCluster, string | undefined]> = [
    ['rocksdb alone', cluster({ backend: 'rocksdb' }), undefined],
    [
      'rocksdb with a full storage block',
      cluster({ backend: 'rocksdb', storage: { size: '1Gi', subPath: 'x', deletionPolicy: 'Retain' } }),
      undefined,
    ],
    ['rocksdb + claimName alone', cluster({ backend: 'rocksdb', storage: { claimName: 'mine', subPath: 'x' } }), undefined],
    [
      'rocksdb + redisAddress',
      cluster({ backend: 'rocksdb', redisAddress: 'r:6379' }),
      "cannot set GcsFaultToleranceOptions.RedisAddress when backend is 'rocksdb'",
    ],
    [
      'rocksdb + redisPassword',
      cluster({ backend: 'rocksdb', redisPassword: { value: 'x' } }),
      "cannot set GcsFaultToleranceOptions.RedisPassword when backend is 'rocksdb'",
    ],
    [
      'rocksdb + redisUsername',
      cluster({ backend: 'rocksdb', redisUsername: { value: 'x' } }),
      "cannot set GcsFaultToleranceOptions.RedisUsername when backend is 'rocksdb'",
    ],
    [
      'rocksdb + externalStorageNamespace',
      cluster({ backend: 'rocksdb', externalStorageNamespace: 'n' }),
      "cannot set GcsFaultToleranceOptions.ExternalStorageNamespace when backend is 'rocksdb'",
    ],
    [
      'claimName + size',
      cluster({ backend: 'rocksdb', storage: { claimName: 'mine', size: '1Gi' } }),
      'GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with size, storageClassName, and accessModes',
    ],
    [
      'claimName + accessModes',
      cluster({ backend: 'rocksdb', storage: { claimName: 'mine', accessModes: ['ReadWriteOnce'] } }),
      'GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with size, storageClassName, and accessModes',
    ],
    [
      'head sets RAY_gcs_storage_path',
      cluster({ backend: 'rocksdb' }, { env: [{ name: 'RAY_gcs_storage_path', value: '/x' }] }),
      'cannot set `RAY_gcs_storage` or `RAY_gcs_storage_path` env var in head Pod when the embedded GCS FT backend is used - these are managed by KubeRay',
    ],
    [
      'head mounts at the store path',
      cluster({ backend: 'rocksdb' }, { volumeMounts: [{ name: 'x', mountPath: '/data/gcs' }] }),
      'cannot set a volume mount named "gcs-storage" or mounted at /data/gcs in the head container when the embedded GCS FT backend is used - it is managed by KubeRay',
    ],
    [
      'head has a volume of that name',
      cluster({ backend: 'rocksdb' }, {}, [{ name: 'gcs-storage', emptyDir: {} }]),
      'cannot set a volume named "gcs-storage" in the head Pod when the embedded GCS FT backend is used - it is managed by KubeRay',
    ],
    [
      'redis + storage',
      cluster({ redisAddress: 'r:6379', storage: { size: '1Gi' } }),
      "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - it only applies to the 'rocksdb' backend",
    ],
    [
      'redis + RAY_gcs_storage env: not ours to judge',
      cluster({ redisAddress: 'r:6379' }, { env: [{ name: 'RAY_gcs_storage', value: 'x' }] }),
      undefined,
    ],
  ];
  for (const [name, c, want] of rows) t.equal(validateRayClusterSpec(c.spec, {}), want, name);
});

t.test('retained claims: no owner, named <cluster>-gcs-pvc, its cluster gone', async (t) => {
  const claim = (namespace: string, name: string, cluster?: string, owned = false): ClaimView => ({
    metadata: {
      namespace,
      name,
      ...(cluster ? { labels: { 'ray.io/cluster': cluster } } : {}),
      ...(owned ? { ownerReferences: [{ kind: 'RayCluster' }] } : {}),
    },
  });
  const live = new Set(['a/alive']);
  const out = retainedGcsStorageClaims(
    [
      claim('b', 'gone-gcs-pvc', 'gone'),
      claim('a', 'alive-gcs-pvc', 'alive'),
      claim('a', 'owned-gcs-pvc', 'owned', true),
      claim('a', 'data', 'gone'),
      claim('a', 'x-gcs-pvc'),
      claim('a', 'alive-gcs-pvc', 'alive'),
      claim('b', 'alive-gcs-pvc', 'alive'),
    ],
    (ns, name) => live.has(`${ns}/${name}`),
  );
  t.same(out, [
    { namespace: 'b', name: 'alive-gcs-pvc', cluster: 'alive' },
    { namespace: 'b', name: 'gone-gcs-pvc', cluster: 'gone' },
  ]);
});

t.test('an existing claim that differs from the spec: what differs (KubeRay warns, nothing is updated)', async (t) => {
  const desired = desiredGcsStorageClaim(cluster({ backend: 'rocksdb', storage: { size: '2Gi', storageClassName: 'fast' } }))!;
  const spec = (storage: unknown, accessModes: unknown, storageClassName?: string) => ({
    spec: { accessModes, resources: { requests: { storage } }, ...(storageClassName ? { storageClassName } : {}) },
  });
  const rows: Array<[string, { spec?: unknown }, RegExp | undefined]> = [
    ['the same', spec('2Gi', ['ReadWriteOnce'], 'fast'), undefined],
    ['the same size, written otherwise', spec('2048Mi', ['ReadWriteOnce'], 'fast'), undefined],
    ['smaller', spec('1Gi', ['ReadWriteOnce'], 'fast'), /\(size 1Gi, spec 2Gi\) and cannot be reconfigured in place/],
    ['other access modes', spec('2Gi', ['ReadWriteMany'], 'fast'), /accessModes ReadWriteMany, spec ReadWriteOnce/],
    ['other class', spec('2Gi', ['ReadWriteOnce'], 'slow'), /storageClassName slow, spec fast/],
    ['no spec at all', {}, /size undefined, spec 2Gi; accessModes , spec ReadWriteOnce; storageClassName undefined, spec fast/],
  ];
  for (const [name, existing, want] of rows) {
    const drift = gcsStorageClaimDrift(desired, existing);
    if (want === undefined) t.equal(drift, undefined, name);
    else t.match(drift, want, name);
  }
  t.match(gcsStorageClaimDrift(desired, spec('1Gi', ['ReadWriteOnce'], 'fast')), /^PersistentVolumeClaim ns\/rc-gcs-pvc differs/);
});

t.test('an existing claim the head must not use: being deleted, or controlled by another RayCluster', async (t) => {
  const rc = cluster({ backend: 'rocksdb' });
  const rows: Array<[string, Record<string, unknown>, RegExp | undefined]> = [
    ['ours', { ownerReferences: owner }, undefined],
    ['retained (no owner): adopted', {}, undefined],
    ['owned, not as controller, by another', { ownerReferences: [{ ...owner[0], uid: 'x', controller: false }] }, undefined],
    [
      'controlled by another cluster',
      { ownerReferences: [{ ...owner[0], name: 'old', uid: 'x' }] },
      /^PersistentVolumeClaim ns\/rc-gcs-pvc belongs to another RayCluster \(old, uid x\)/,
    ],
    [
      'being deleted',
      { ownerReferences: owner, deletionTimestamp: '2026-12-06T12:00:00Z' },
      /^PersistentVolumeClaim ns\/rc-gcs-pvc is being deleted/,
    ],
  ];
  for (const [name, metadata, want] of rows) {
    const got = gcsStorageClaimConflict(rc, { metadata });
    if (want) t.match(got, want, name);
    else t.equal(got, undefined, name);
  }
});
