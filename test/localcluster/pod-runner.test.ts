// The RayCluster operator with Ray pods that really run: the ray pod runner (localcluster/pod-runner.ts)
// starts each head / worker Pod the operator creates as a local Ray process and reports it Running /
// Ready, so the cluster reaches `ready` with two live Ray nodes; a head whose process dies is Failed,
// deleted by the operator and re-created, and runs again.
// Needs Ray (tools/setup.sh installs it); fails without it, naming the set-up command.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { startController } from '../../controller/main.ts';
import { gcsFtCleanupModule } from '../../controller/gcsft-cleanup/module.ts';
import { rayClusterOperatorModule } from '../../controller/raycluster/module.ts';
import { RayPodRunner } from '../../localcluster/pod-runner.ts';
import { descendants, findRay } from '../../localcluster/ray.ts';
import type { RayClusterStatus } from '../../src/raycluster/status.ts';
import { env, getCluster, quiet, until } from '../helpers/harness.ts';
import { kuberaySample } from '../raycluster/samples.ts';
import { RAYCLUSTERS } from '../../src/types.ts';
import { PODS } from '../../kube/resources.ts';
import { missingPart } from '../helpers/parts.ts';

const found = findRay();
if ('missing' in found) {
  t.fail(missingPart(found.missing));
} else {
  t.test(
    'operator + ray pod runner: the sample cluster becomes ready with live Ray; a dead head is replaced',
    { timeout: 280_000 },
    async (tt) => {
      const e = await env(tt);
      const runner = new RayPodRunner({ kubeConfig: e.ns.kubeConfig, namespace: e.ns.name, ray: found, logger: quiet });
      await runner.start();
      tt.teardown(() => runner.stop());
      const c = await startController({
        kubeConfig: e.ns.kubeConfig,
        watchNamespace: e.ns.name,
        workers: 2,
        modules: [gcsFtCleanupModule, rayClusterOperatorModule],
        env: {},
        logger: quiet,
        moduleFlags: { 'cleanup-image': 'raykeeper:test' },
      });
      tt.teardown(() => c.stop());
      const sample = kuberaySample();
      // Small enough for a shared 2-core machine.
      sample.spec!.headGroupSpec!.template!.spec!.containers![0]!.resources = { limits: { cpu: '1', memory: '1Gi' } };
      await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, sample);
      const ready = await until(
        async () => {
          const s = ((await getCluster(e, 'raycluster-kuberay'))?.status ?? {}) as RayClusterStatus;
          return s.state === 'ready' ? s : undefined;
        },
        'the cluster ready with running Ray',
        150_000,
        500,
      );
      tt.equal(ready.readyWorkerReplicas, 1, 'the worker joined and is ready');
      tt.equal(ready.head?.podIP, '127.0.0.1');
      // Each pod has a Ray temp dir of its own, as each pod has its own /tmp: Ray's job supervisor gives a
      // job's driver the address the last `ray start` in its temp dir recorded (ray_current_cluster).
      const tempDirs = [...(runner as unknown as { running: Map<string, { proc: { proc: { pid?: number } } }> }).running.values()].map(
        (r) => /--temp-dir=(\S+)/.exec(readFileSync(`/proc/${r.proc.proc.pid}/cmdline`, 'utf8').replaceAll('\0', ' '))?.[1],
      );
      tt.equal(tempDirs.length, 2, 'head and worker run here');
      tt.ok(tempDirs.every((d) => d !== undefined) && new Set(tempDirs).size === 2, `a temp dir per pod: ${tempDirs.join(', ')}`);

      // Kill the head's Ray processes (as an OOM kill would): the pod goes Failed, the operator replaces it.
      const head = (await e.kube.list({ ...PODS, namespace: e.ns.name }, { labelSelector: 'ray.io/node-type=head' })).items[0]!;
      const running = (runner as unknown as { running: Map<string, { proc: { proc: { pid?: number } } }> }).running.get(
        `${e.ns.name}/${head.metadata.name}`,
      )!;
      const pid = running.proc.proc.pid!;
      for (const p of [pid, ...descendants(pid)]) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          // gone
        }
      }
      const next = await until(
        async () => {
          const hs = (await e.kube.list({ ...PODS, namespace: e.ns.name }, { labelSelector: 'ray.io/node-type=head' })).items;
          return hs.length === 1 && hs[0]!.metadata.uid !== head.metadata.uid && hs[0]!.status?.phase === 'Running' ? hs[0] : undefined;
        },
        'a new head pod running',
        100_000,
        500,
      );
      tt.ok(
        next.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'),
        'the new head is ready',
      );
    },
  );
}
