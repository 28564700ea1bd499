// With real Ray: the head pod OUR builder makes (its command line and env, the Redis password through a
// secretKeyRef) started as a local process writes its GCS tables into a test Redis under RAY<ns>@*,
// where <ns> is the namespace the cleanup resolves for the same RayCluster; the cleanup Job's env run
// through `raykeeper redis-cleanup` then removes exactly those keys.
// Needs Ray (tools/install-ray.sh; found by localcluster/ray.ts) and redis-server; fails without them, naming the set-up command.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { runWith } from '../../controller/redis-cleanup/cli.ts';
import { resolveEnv, type EnvLookups } from '../../kube/env.ts';
import type { Container } from '../../kube/model.ts';
import { findRay, waitForRayStart } from '../../localcluster/ray.ts';
import { startRayPod, type RayPodProcess } from '../../localcluster/ray-pod.ts';
import { cleanupEnv, effectiveStorageNamespace } from '../../src/gcsft/redis-env.ts';
import { buildHeadPod, buildWorkerPod } from '../../src/raycluster/pods.ts';
import { headServiceFqdn } from '../../src/raycluster/names.ts';
import type { RayCluster } from '../../src/types.ts';
import { freePort, redisServerMissing, startRedisServer } from '../helpers/redis-server.ts';
import { client } from '../redis/fixtures.ts';
import { missingPart } from '../helpers/parts.ts';

const missing = redisServerMissing();
const found = findRay();
if (missing) {
  t.fail(missingPart(missing));
} else if ('missing' in found) {
  t.fail(missingPart(found.missing));
} else {
  t.test(
    "our head pod's command and env: Ray writes RAY<ns>@* under the cleanup's namespace; the cleanup removes it",
    { timeout: 280_000 },
    async (t) => {
      const password = randomBytes(12).toString('hex');
      const redis = await startRedisServer({ password });
      t.teardown(() => redis.stop());
      const r = client(redis.port, { password });
      t.teardown(() => r.disconnect());
      const temp = await mkdtemp(join(tmpdir(), 'rk-raypod-'));
      t.teardown(() => rm(temp, { recursive: true, force: true }));
      const local = {
        'node-ip-address': '127.0.0.1',
        'num-cpus': '1',
        'object-store-memory': '80000000',
        'temp-dir': temp,
        'disable-usage-stats': 'true',
      };
      const uid = randomUUID();
      // Fresh free ports for every start (Ray's processes of a start that failed may still hold the last ones).
      const makeCluster = async (): Promise<RayCluster> => {
        const [gcs, agent, metrics, clientPort, wAgent, wMetrics] = await Promise.all([
          freePort(),
          freePort(),
          freePort(),
          freePort(),
          freePort(),
          freePort(),
        ]);
        return {
          apiVersion: 'ray.io/v1',
          kind: 'RayCluster',
          metadata: { name: 'rk', namespace: 'team', uid },
          spec: {
            gcsFaultToleranceOptions: {
              redisAddress: `127.0.0.1:${redis.port}`,
              redisPassword: { valueFrom: { secretKeyRef: { name: 'redis', key: 'password' } } },
            },
            headGroupSpec: {
              // Free ports instead of 6379 / 52365 / 8080 (other tests run beside this one); no dashboard.
              rayStartParams: {
                ...local,
                port: String(gcs),
                'dashboard-agent-listen-port': String(agent),
                'metrics-export-port': String(metrics),
                'ray-client-server-port': String(clientPort),
                'include-dashboard': 'false',
              },
              template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.60.0' }] } },
            },
            workerGroupSpecs: [
              {
                groupName: 'w',
                replicas: 1,
                rayStartParams: { ...local, 'dashboard-agent-listen-port': String(wAgent), 'metrics-export-port': String(wMetrics) },
                template: { spec: { containers: [{ name: 'ray-worker', image: 'rayproject/ray:2.60.0' }] } },
              },
            ],
          },
        };
      };
      let cluster = await makeCluster();
      const lookups: EnvLookups = {
        secret: async (_ns, name) => (name === 'redis' ? { password } : undefined),
        configMap: async () => undefined,
      };
      const head = buildHeadPod(cluster);
      t.notOk(JSON.stringify(head).includes(password), 'the password is not in the pod (secretKeyRef)');
      const ns = effectiveStorageNamespace(cluster)!;
      t.equal(ns, cluster.metadata.uid, 'no option, no annotation: the UID');
      const keys = async () => (await r.keys('RAY*')).sort();
      const nodes = async () => Object.keys(await r.hgetall(`RAY${ns}@NODE`)).length;

      // Head, then a worker built by our builder joining through the head Service's name (mapped to
      // 127.0.0.1). `ray start` gives its raylet 30 s to register and exits if it has not, which a loaded
      // machine can cause; as a kubelet restarts such a container, that one exit is retried (up to 3 starts
      // in all) with fresh ports. Any other exit fails the test.
      let headProc: RayPodProcess | undefined;
      let workerProc: RayPodProcess | undefined;
      t.teardown(async () => {
        await workerProc?.stop();
        await headProc?.stop();
      });
      for (let attempt = 1; ; attempt++) {
        const started = Date.now();
        headProc = await startRayPod(buildHeadPod(cluster), { ray: found, lookups, extraEnv: { RAY_USAGE_STATS_ENABLED: '0' } });
        let timedOut = headProc;
        if (
          (await waitForRayStart(
            headProc.proc,
            headProc.log,
            async () => (await keys()).includes(`RAY${ns}@NODE`),
            120_000,
            'the head',
          )) === 'ready'
        ) {
          t.comment(`the head wrote its tables after ${Date.now() - started} ms`);
          const worker = buildWorkerPod(cluster, cluster.spec!.workerGroupSpecs![0]!);
          workerProc = await startRayPod(
            { ...worker, metadata: { ...worker.metadata, name: 'rk-w-worker-local' } },
            { ray: found, lookups, hosts: [headServiceFqdn(cluster)], extraEnv: { RAY_USAGE_STATS_ENABLED: '0' } },
          );
          if ((await waitForRayStart(workerProc.proc, workerProc.log, async () => (await nodes()) >= 2, 90_000, 'the worker')) === 'ready')
            break;
          timedOut = workerProc;
        }
        if (attempt === 3) throw new Error(`Ray timed out starting three times: ${timedOut.log().slice(-2000)}`);
        t.comment(`Ray timed out starting (start ${attempt}); starting head and worker again with fresh ports and an empty Redis`);
        await workerProc?.stop();
        await headProc.stop();
        workerProc = undefined;
        // The failed start's NODE entries would otherwise satisfy the next start's checks (this Redis is the test's own).
        await r.flushall();
        cluster = await makeCluster();
      }
      t.equal(headProc.env.RAY_external_storage_namespace, ns, 'the head process got the namespace');
      t.equal(headProc.env.REDIS_PASSWORD, password, 'and the password from the Secret');
      t.pass('the worker registered with the head (two nodes in the NODE table)');

      await workerProc!.stop();
      await headProc.stop();
      const written = await keys();
      t.ok(
        written.length > 0 && written.every((k) => k.startsWith(`RAY${ns}@`)),
        `every key Ray wrote is under RAY${ns}@ (${written.join(', ')})`,
      );

      // The cleanup Job's env for the same cluster, resolved the same way, run by `raykeeper redis-cleanup`.
      const jobEnv = await resolveEnv(
        { name: 'redis-cleanup', env: cleanupEnv(cluster) } as Container,
        { name: 'rk-redis-cleanup', namespace: 'team', uid: 'job', labels: {}, annotations: {}, serviceAccountName: 'default' },
        lookups,
      );
      t.equal(jobEnv.RAY_external_storage_namespace, ns, 'the cleanup deletes the namespace the head wrote');
      const out = { stdout: '', stderr: '' };
      const code = await runWith(['--timeout', '60'], {
        env: jobEnv,
        stdout: { write: (s: string) => (out.stdout += s) },
        stderr: { write: (s: string) => (out.stderr += s) },
      });
      t.equal(code, 0, out.stderr);
      t.same(await keys(), [], 'nothing of the cluster is left in Redis');
    },
  );
}
