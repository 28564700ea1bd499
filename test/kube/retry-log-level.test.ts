// How a failed reconcile is logged, against the real kube-apiserver: a write that lost a race (409
// Conflict, optimistic concurrency doing its job) is retried and logged at debug; any other failure is a
// warning an admin sees. Both are retried.
import t from 'tap';
import { Manager } from '../../kube/manager.ts';
import { KubeApiError } from '../../kube/client.ts';
import { createMetricsRegistry } from '../../kube/metrics.ts';
import { CONFIGMAPS } from '../../kube/resources.ts';
import { testNamespace } from '../helpers/control-plane.ts';
import { until } from '../helpers/until.ts';
import { capturingLogger } from '../webhook/helpers.ts';

t.test('a 409 conflict retry logs at debug, another error at warn; both are retried', async (tt) => {
  const ns = await testNamespace(tt);
  const { logger, lines } = capturingLogger();
  const manager = new Manager({ kubeConfig: ns.kubeConfig, logger, metrics: createMetricsRegistry(), watchNamespace: ns.name });
  const calls = new Map<string, number>();
  const failures: Record<string, KubeApiError> = {
    conflict: new KubeApiError('PUT', '/x/conflict', 409, { reason: 'Conflict', message: 'the object has been modified' }, ''),
    broken: new KubeApiError('PUT', '/x/broken', 500, { reason: 'InternalError', message: 'etcd is sad' }, ''),
  };
  manager.add({
    name: 'probe',
    reconciler: {
      reconcile: async (key: string) => {
        const name = key.split('/')[1]!;
        calls.set(name, (calls.get(name) ?? 0) + 1);
        if (calls.get(name) === 1 && failures[name]) throw failures[name];
      },
    },
    watches: [{ informer: manager.ctx.informers.get({ ...CONFIGMAPS, namespace: ns.name }) }],
  });
  const stop = new AbortController();
  const run = manager.run(stop.signal);
  tt.teardown(async () => {
    stop.abort();
    await run;
  });
  for (const name of Object.keys(failures)) await ns.kube.create({ ...CONFIGMAPS, namespace: ns.name }, { metadata: { name } });
  await until(async () => (calls.get('conflict') ?? 0) >= 2 && (calls.get('broken') ?? 0) >= 2, 'both retried');
  const retries = lines().filter((l) => l.msg === 'reconcile failed; will retry');
  const level = (name: string) => retries.find((l) => String(l.key).endsWith(`/${name}`))?.level;
  tt.equal(level('conflict'), 20, 'the conflict at debug (pino 20)');
  tt.equal(level('broken'), 40, 'the 500 at warn (pino 40)');
});
