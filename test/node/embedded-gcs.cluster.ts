// Embedded GCS storage (KubeRay v1.7's `gcsFaultToleranceOptions.backend: rocksdb`) on the real node
// (`raykeeper dev --kubelet`, root; `npm run test:cluster`), built by our in-cluster operator, with Ray
// 2.60's RocksDB GCS store: the node has no storage provisioner, so the test makes hostPath
// PersistentVolumes pre-bound (claimRef) to the claims the operator will create. A detached actor made
// through the head survives the head pod's deletion (the new head's GCS reads the actor table back from
// RocksDB on the claim and the worker that holds the actor reconnects), as KubeRay's
// TestRayClusterEmbeddedGCSFaultTolerance checks; deleting the cluster takes its DeleteWithCluster claim
// (garbage collector, owner reference); a Retain cluster's claim outlives it. Then the host is restored.
import { chmodSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import t from 'tap';
import { isNotFound, type ResourceRef } from '../../kube/client.ts';
import type { Pod } from '../../kube/model.ts';
import { PERSISTENTVOLUMECLAIMS, PODS } from '../../kube/resources.ts';
import { RAY_CLUSTER_LABEL, RAY_NODE_TYPE_LABEL } from '../../src/names.ts';
import { RAY_RELEASE } from '../../src/ray-release.ts';
import { RAYCLUSTERS } from '../../src/types.ts';
import { GCS_STORAGE_MOUNT_PATH } from '../../src/raycluster/gcs-storage.ts';
import { kubectl, nodeUnderTest, rayContainer, podReady, readyPods, until } from './helpers.ts';

const { env, kube, stopAndAssertRestored } = await nodeUnderTest(t);
const NS = 'ray-embedded-gcs';
const CLASS = 'raykeeper-test-hostpath';
// Beside the node's state (t.testdir() again would empty that directory).
const volumes = join(dirname(env.kubeconfig), 'volumes');

const podsOf = async (labelSelector: string): Promise<Pod[]> => (await kube.list(PODS.at(NS), { labelSelector })).items;
const gone = (ref: ResourceRef) => async (): Promise<boolean> =>
  kube.get(ref).then(
    () => false,
    (err: unknown) => isNotFound(err),
  );
const podSummary = async (): Promise<unknown> =>
  (await kube.list(PODS.at(NS))).items.map((p) => ({ name: p.metadata.name, phase: p.status?.phase, status: p.status?.conditions }));

/**
 * A hostPath PersistentVolume pre-bound to the claim `claim` (the node has no provisioner). The directory
 * is world-writable: Ray runs as uid 1000 and the kubelet does not chown a hostPath.
 */
async function hostPathVolume(name: string, claim: string, subPath?: string): Promise<string> {
  const dir = join(volumes, name);
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o777);
  if (subPath !== undefined) {
    mkdirSync(join(dir, subPath), { recursive: true });
    chmodSync(join(dir, subPath), 0o777);
  }
  await kube.request('POST', '/api/v1/persistentvolumes', {
    body: {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Retain',
        storageClassName: CLASS,
        claimRef: { namespace: NS, name: claim },
        hostPath: { path: dir, type: 'Directory' },
      },
    },
  });
  return dir;
}

function cluster(name: string, storage: Record<string, unknown>, workers: number): object {
  return {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: { name },
    spec: {
      rayVersion: RAY_RELEASE,
      gcsFaultToleranceOptions: { backend: 'rocksdb', storage: { storageClassName: CLASS, ...storage } },
      headGroupSpec: {
        rayStartParams: { 'num-cpus': '0' },
        template: { spec: { containers: [rayContainer('ray-head', '500m', '2G')] } },
      },
      workerGroupSpecs: [
        {
          groupName: 'small',
          replicas: workers,
          minReplicas: workers,
          maxReplicas: 1,
          rayStartParams: { 'num-cpus': '1' },
          template: { spec: { containers: [rayContainer('ray-worker', '300m', '1G')] } },
        },
      ],
    },
  };
}

/** The files under `dir` (relative paths), to show where RocksDB wrote. */
function filesUnder(dir: string): string[] {
  try {
    return readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
      .sort();
  } catch {
    return [];
  }
}
/** RocksDB's CURRENT file somewhere under `dir` (its store). */
const rocksdbStore = (dir: string): string | undefined => filesUnder(dir).find((f) => f === 'CURRENT' || f.endsWith('/CURRENT'));

/** Python in the head's Ray container (ray.init() reaches the local GCS); stdout. */
function python(head: string, script: string): string {
  const r = kubectl(env.kubeconfig, ['exec', '-n', NS, head, '-c', 'ray-head', '--', 'python', '-c', script]);
  if (r.status !== 0) throw new Error(`kubectl exec python in ${head}: ${r.stderr}\n${r.stdout}`);
  return r.stdout.trim();
}

const CREATE_ACTOR = `
import ray
ray.init(namespace="embedded-gcs")
@ray.remote(num_cpus=1)
class Counter:
    def __init__(self):
        self.n = 0
    def inc(self):
        self.n += 1
        return self.n
c = Counter.options(name="counter", lifetime="detached").remote()
print("count", ray.get(c.inc.remote()))
`;
const GET_ACTOR = `
import ray
ray.init(namespace="embedded-gcs")
c = ray.get_actor("counter")
print("count", ray.get(c.inc.remote(), timeout=120))
`;

async function readyHead(name: string, not?: string): Promise<Pod> {
  return until(
    async () =>
      (await podsOf(`${RAY_CLUSTER_LABEL}=${name},${RAY_NODE_TYPE_LABEL}=head`)).find((p) => podReady(p) && p.metadata.name !== not),
    `a Ready head of ${name}${not ? ` other than ${not}` : ''}`,
    420_000,
    2000,
  ).catch(async (err: Error) => {
    throw new Error(`${err.message}: ${JSON.stringify(await podSummary())}`);
  });
}

t.test('backend rocksdb: a detached actor survives the head pod; the DeleteWithCluster claim goes with the cluster', async (t) => {
  await kube.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } } });
  const name = 'embedded-gcs';
  const claimName = `${name}-gcs-pvc`;
  const dir = await hostPathVolume('embedded-gcs-pv', claimName, 'store');
  await kube.create(RAYCLUSTERS.at(NS), cluster(name, { subPath: 'store' }, 1));

  const claim = await until(
    () => kube.getOrUndefined({ ...PERSISTENTVOLUMECLAIMS, namespace: NS, name: claimName }),
    'the operator-managed claim',
    60_000,
    500,
  );
  t.same(
    (claim.metadata.ownerReferences ?? []).map((o) => [o.kind, o.name, o.controller]),
    [['RayCluster', name, true]],
    'owned by the RayCluster (DeleteWithCluster, the default)',
  );
  const pods = await readyPods(kube, NS, `${RAY_CLUSTER_LABEL}=${name}`, 2, 480_000);
  t.equal(pods.length, 2);
  const head = await readyHead(name);
  const ray = head.spec?.containers?.[0];
  t.same(
    ray?.env?.filter((e) => e.name.startsWith('RAY_gcs_storage')).map((e) => [e.name, e.value]),
    [
      ['RAY_gcs_storage', 'rocksdb'],
      ['RAY_gcs_storage_path', GCS_STORAGE_MOUNT_PATH],
    ],
    'the head selects the RocksDB store on the mount',
  );
  t.notOk(
    ray?.env?.some((e) => e.name === 'RAY_REDIS_ADDRESS'),
    'no Redis address',
  );
  t.same((await kube.get(RAYCLUSTERS.at(NS, name))).metadata.finalizers ?? [], [], 'no Redis cleanup finalizer');

  t.match(python(head.metadata.name!, CREATE_ACTOR), /count 1/, 'the detached actor counted 1');
  const store = rocksdbStore(join(dir, 'store'));
  t.ok(
    store,
    `RocksDB wrote its store on the claim's volume, under subPath store (${store}; all: ${filesUnder(dir).slice(0, 12).join(' ')})`,
  );

  const d = kubectl(env.kubeconfig, ['delete', 'pod', '-n', NS, head.metadata.name!, '--wait=false']);
  t.equal(d.status, 0, d.stderr);
  const next = await readyHead(name, head.metadata.name);
  t.not(next.metadata.name, head.metadata.name, 'a new head pod');
  // The new GCS knows the actor by name (its actor table came back from RocksDB) and the actor, alive on
  // the worker all along, kept its state.
  const out = await until(
    async () => {
      try {
        return python(next.metadata.name!, GET_ACTOR);
      } catch (err) {
        t.comment(String(err).slice(0, 400));
        return undefined;
      }
    },
    'the detached actor through the new head',
    300_000,
    5000,
  );
  t.match(out, /count 2/, 'the same actor, its state intact: 2');

  await kube.request('DELETE', `/apis/ray.io/v1/namespaces/${NS}/rayclusters/${name}`);
  await until(gone({ ...RAYCLUSTERS, namespace: NS, name }), 'the RayCluster to be gone', 120_000, 500);
  await until(gone({ ...PERSISTENTVOLUMECLAIMS, namespace: NS, name: claimName }), 'the claim to be garbage-collected', 240_000, 1000);
  t.pass('the DeleteWithCluster claim went with the cluster');
  await until(async () => (await podsOf(`${RAY_CLUSTER_LABEL}=${name}`)).length === 0, 'the Ray pods to be gone', 180_000, 1000);
});

t.test('deletionPolicy Retain: the claim (and the store on it) outlives the cluster', async (t) => {
  const name = 'retained';
  const claimName = `${name}-gcs-pvc`;
  const dir = await hostPathVolume('retained-pv', claimName);
  await kube.create(RAYCLUSTERS.at(NS), cluster(name, { deletionPolicy: 'Retain' }, 0));
  const claim = await until(
    () => kube.getOrUndefined({ ...PERSISTENTVOLUMECLAIMS, namespace: NS, name: claimName }),
    'the operator-managed claim',
    60_000,
    500,
  );
  t.same(claim.metadata.ownerReferences ?? [], [], 'no owner reference');
  t.same(claim.metadata.labels?.[RAY_CLUSTER_LABEL], name, 'labelled with its cluster');
  const head = await readyHead(name);
  await until(async () => rocksdbStore(dir), 'the RocksDB store on the volume', 120_000, 1000).catch(async (err: Error) => {
    const inside = kubectl(env.kubeconfig, [
      'exec',
      '-n',
      NS,
      head.metadata.name!,
      '-c',
      'ray-head',
      '--',
      'ls',
      '-laR',
      GCS_STORAGE_MOUNT_PATH,
    ]);
    throw new Error(`${err.message}: files ${JSON.stringify(filesUnder(dir))}, in the head: ${inside.stdout} ${inside.stderr}`);
  });

  await kube.request('DELETE', `/apis/ray.io/v1/namespaces/${NS}/rayclusters/${name}`);
  await until(gone({ ...RAYCLUSTERS, namespace: NS, name }), 'the RayCluster to be gone', 120_000, 500);
  await until(async () => (await podsOf(`${RAY_CLUSTER_LABEL}=${name}`)).length === 0, 'the Ray pods to be gone', 180_000, 1000);
  const kept = await kube.getOrUndefined({ ...PERSISTENTVOLUMECLAIMS, namespace: NS, name: claimName });
  t.ok(kept && !kept.metadata.deletionTimestamp, 'the claim is kept');
  t.ok(rocksdbStore(dir), 'and its store');
});

t.test('stopping the node restores the host', async (t) => {
  await stopAndAssertRestored(t);
});
