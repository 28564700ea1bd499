// The ray pod runner (localcluster/pod-runner.ts) with stand-in processes that print what `ray start`
// would; the pods and claims are real objects on the real API server, whose status the runner writes as a
// kubelet would.
// - It starts a Ray container again when its `ray start` ended with Ray's own start-up timeout (a slow
//   machine), and only then: any other exit fails the pod.
// - A PersistentVolumeClaim volume is a directory per claim (by uid) that outlives the pod: env naming the
//   mount path points there (localcluster/claim-dirs.ts); no start before the claim exists.
import { stat } from 'node:fs/promises';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import t, { type Test } from 'tap';
import { KubeClient, MERGE_PATCH } from '../../kube/client.ts';
import { createLogger } from '../../kube/logger.ts';
import type { Pod } from '../../kube/model.ts';
import { PERSISTENTVOLUMECLAIMS, PODS } from '../../kube/resources.ts';
import { RayPodRunner } from '../../localcluster/pod-runner.ts';
import { RAY_START_TIMED_OUT } from '../../localcluster/ray.ts';
import { testNamespace } from '../helpers/control-plane.ts';
import { until } from '../helpers/until.ts';
import { sleep } from '../../kube/backoff.ts';

const quiet = createLogger('test', { level: process.env.TEST_LOG_LEVEL ?? 'silent' });

/**
 * A head pod whose container counts its starts in `counter` and ends each of the first `failures` with
 * `failure`'s text and exit 1; after that it reports the runtime started and stays up. The runner appends
 * its port flags to the command line: the trailing `#` makes them a comment.
 */
function headPod(name: string, counter: string, failures: number, failure: string): Pod {
  const script = [
    `n=$(( $(cat ${counter} 2>/dev/null || echo 0) + 1 )); echo $n > ${counter};`,
    `if [ $n -le ${failures} ]; then echo ${JSON.stringify(failure)} >&2; exit 1; fi;`,
    'echo "Ray runtime started."; exec sleep 600 #',
  ].join(' ');
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { 'ray.io/is-ray-node': 'yes', 'ray.io/node-type': 'head', 'ray.io/cluster': name } },
    spec: { containers: [{ name: 'ray-head', image: 'stand-in', command: ['/bin/sh', '-c'], args: [script] }] },
  } as Pod;
}

/** A test namespace with a pod runner on it, a temp dir for the counters, and `phase`: waits for a pod's phase. */
async function runnerIn(t: Test) {
  const ns = await testNamespace(t);
  const kube = new KubeClient(ns.kubeConfig);
  t.teardown(() => kube.close());
  const dir = await mkdtemp(join(tmpdir(), 'raykeeper-pod-runner-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const runner = new RayPodRunner({
    kubeConfig: ns.kubeConfig,
    namespace: ns.name,
    ray: { ray: '/bin/true', python: '/bin/false' },
    logger: quiet,
  });
  await runner.start();
  t.teardown(() => runner.stop());
  const create = (pod: Pod) => kube.create(PODS.at(ns.name), pod);
  const phase = (name: string, want: string) =>
    until(
      async () => {
        const p = await kube.get(PODS.at(ns.name, name));
        return p.status?.phase === want ? p : undefined;
      },
      `pod ${name} ${want}`,
      60_000,
      200,
    );
  return { dir, create, phase, kube, ns: ns.name };
}

t.test("a Ray container that hit Ray's start-up timeout is started again; any other exit fails the pod", async (t) => {
  const { dir, create, phase } = await runnerIn(t);
  const timeout = `Exception: ${RAY_START_TIMED_OUT}. This could happen because some of the raylet failed to startup.`;
  await create(headPod('slow', join(dir, 'slow'), 2, timeout));
  await create(headPod('broken', join(dir, 'broken'), 1, 'ValueError: bad --port'));

  const slow = await phase('slow', 'Running');
  t.equal(await readFile(join(dir, 'slow'), 'utf8'), '3\n', 'started three times: two start-up timeouts, then up');
  t.equal(slow.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True', 'Ready once up');

  const broken = await phase('broken', 'Failed');
  t.equal(broken.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 1, 'the exit code reported');
  t.equal(await readFile(join(dir, 'broken'), 'utf8'), '1\n', 'another failure: started once, not again');
});

t.test("Ray's start-up timeout every time: started again at most twice, then the pod is Failed", async (t) => {
  const { dir, create, phase } = await runnerIn(t);
  await create(headPod('never', join(dir, 'never'), 99, `Exception: ${RAY_START_TIMED_OUT}.`));
  const failed = await phase('never', 'Failed');
  t.equal(failed.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 1);
  t.equal(await readFile(join(dir, 'never'), 'utf8'), '3\n', 'three starts in all');
});

/** A head pod that mounts the claim `claim` at /data/gcs (subPath `sub`) and writes its RAY_gcs_storage_path to `out`. */
function claimHeadPod(name: string, claim: string, out: string): Pod {
  const pod = headPod(name, `${out}.starts`, 0, '');
  const c = pod.spec!.containers[0]!;
  c.args = [`echo "$RAY_gcs_storage_path" > ${out}; ${c.args![0]}`];
  c.env = [{ name: 'RAY_gcs_storage_path', value: '/data/gcs/db' }];
  c.volumeMounts = [{ name: 'gcs-storage', mountPath: '/data/gcs', subPath: 'sub' }];
  pod.spec!.volumes = [{ name: 'gcs-storage', persistentVolumeClaim: { claimName: claim } }];
  return pod;
}

t.test('a claim is a directory of its own, kept across pods, new when the claim is made again; no start before it exists', async (t) => {
  const { dir, create, phase, kube, ns } = await runnerIn(t);
  const claim = (name: string) =>
    kube.create(PERSISTENTVOLUMECLAIMS.at(ns), {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    });
  const pathOf = (out: string) => readFile(join(dir, out), 'utf8').then((s) => s.trim());

  await create(claimHeadPod('first', 'c1', join(dir, 'first')));
  await sleep(2500);
  t.equal(await stat(join(dir, 'first.starts')).catch(() => undefined), undefined, 'not started while its claim does not exist');
  t.equal((await kube.get(PODS.at(ns, 'first'))).status?.phase, 'Pending', 'and left Pending');
  const c1 = await claim('c1');
  await phase('first', 'Running');
  const first = await pathOf('first');
  t.match(first, new RegExp(`/claims/${c1.metadata.uid}/sub/db$`), "the mount path points into the claim's directory (subPath kept)");
  t.ok((await stat(dirname(first))).isDirectory(), "the claim's directory is made");

  await kube.delete(PODS.at(ns, 'first'));
  await create(claimHeadPod('second', 'c1', join(dir, 'second')));
  await phase('second', 'Running');
  t.equal(await pathOf('second'), first, 'a new pod of the same claim: the same directory');

  await kube.delete(PODS.at(ns, 'second'));
  await kube.delete(PERSISTENTVOLUMECLAIMS.at(ns, 'c1'));
  // No kube-controller-manager here to lift the pvc-protection finalizer once no pod uses the claim.
  await kube.patch(PERSISTENTVOLUMECLAIMS.at(ns, 'c1'), { metadata: { finalizers: null } }, MERGE_PATCH).catch(() => undefined);
  await until(async () => (await kube.getOrUndefined(PERSISTENTVOLUMECLAIMS.at(ns, 'c1'))) === undefined, 'c1 gone');
  const again = await claim('c1');
  await create(claimHeadPod('third', 'c1', join(dir, 'third')));
  await phase('third', 'Running');
  const third = await pathOf('third');
  t.not(third, first, 'the claim made again: a new directory');
  t.match(third, new RegExp(`/claims/${again.metadata.uid}/sub/db$`));
});
