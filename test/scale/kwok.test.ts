// kwok's simulation on our control plane (localcluster/kwok.ts), which the scale bench measures on: fake
// nodes Ready, a pod scheduled by kube-scheduler onto one and Running and Ready, a Job's pod Succeeded
// so kube-controller-manager completes the Job (our GCS-FT cleanup Jobs need that), a deleted pod gone.
// A control plane of its own (kwok and kube-controller-manager act on every pod and node they see).
// Fails, naming the set-up command, when kwok or the node's commands are not built.
import t from 'tap';
import { missingKwokParts, startKwokCluster, type KwokCluster } from '../../localcluster/kwok.ts';
import { KubeClient } from '../../kube/client.ts';
import { JOBS, NAMESPACES, NODES, PODS } from '../../kube/resources.ts';
import { missingPart } from '../helpers/parts.ts';
import { until } from '../helpers/until.ts';

type Conditions = { conditions?: Array<{ type: string; status: string }> | null };
const isTrue = (s: Conditions | undefined, type: string): boolean =>
  s?.conditions?.some((c) => c.type === type && c.status === 'True') ?? false;

const missing = missingKwokParts();
if (missing.length > 0) {
  t.fail(missingPart(`kwok or the node's commands are not built: ${missing.join(', ')}`));
} else {
  let cluster: KwokCluster | undefined;
  let kube: KubeClient | undefined;
  t.teardown(async () => {
    kube?.close();
    await cluster?.stop();
  });
  cluster = await startKwokCluster({ nodes: 3, crdsDir: false });
  kube = new KubeClient(cluster.controlPlane.kubeConfig());
  const k = kube;
  const namespace = 'kwok';
  await k.create(NAMESPACES, { metadata: { name: namespace } });

  t.test('the fake nodes are Ready', async (t) => {
    const nodes = await k.list(NODES);
    t.same(nodes.items.map((n) => n.metadata.name).sort(), cluster!.nodeNames);
    for (const n of nodes.items) t.ok(isTrue(n.status, 'Ready'), `${n.metadata.name} Ready`);
  });

  t.test('a pod is scheduled onto a fake node and becomes Running and Ready; deleted, it is gone', async (t) => {
    await k.create(
      { ...PODS, namespace },
      {
        metadata: { name: 'head' },
        spec: {
          containers: [
            {
              name: 'ray-head',
              image: 'rayproject/ray:2.41.0',
              resources: { requests: { cpu: '1', memory: '2Gi' } },
              readinessProbe: { exec: { command: ['false'] } },
            },
          ],
        },
      },
    );
    const pod = await until(async () => {
      const p = await k.get({ ...PODS, namespace, name: 'head' });
      return p.status?.phase === 'Running' && isTrue(p.status, 'Ready') ? p : undefined;
    }, 'the pod Running and Ready');
    const nodeName = String(pod.spec?.nodeName);
    t.ok(cluster!.nodeNames.includes(nodeName), `scheduled onto a kwok node (${nodeName})`);
    t.match(pod.status?.podIP ?? '', /^10\.244\./, 'a pod IP from kwok');
    t.ok(pod.status?.containerStatuses?.[0]?.ready, 'its container ready');

    await k.delete({ ...PODS, namespace, name: 'head' });
    await until(async () => (await k.getOrUndefined({ ...PODS, namespace, name: 'head' })) === undefined, 'the deleted pod gone');
    t.pass('the deleted pod is gone (kwok released it without a grace period to wait out)');
  });

  t.test("a Job's pod Succeeds and the Job completes", async (t) => {
    await k.create(
      { ...JOBS, namespace },
      {
        metadata: { name: 'cleanup' },
        spec: {
          backoffLimit: 0,
          template: {
            spec: { restartPolicy: 'Never', containers: [{ name: 'cleanup', image: 'raykeeper:test', args: ['redis-cleanup'] }] },
          },
        },
      },
    );
    const job = await until(async () => {
      const j = await k.get({ ...JOBS, namespace, name: 'cleanup' });
      return isTrue(j.status, 'Complete') ? j : undefined;
    }, 'the Job Complete');
    t.equal(job.status?.succeeded, 1, 'one pod succeeded');
    const pods = await k.list({ ...PODS, namespace }, { labelSelector: 'job-name=cleanup' });
    t.same(
      pods.items.map((p) => p.status?.phase),
      ['Succeeded'],
      "the Job's pod Succeeded",
    );
  });
}
