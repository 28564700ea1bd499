// KubeRay's metric names on the controller's /metrics (controller/kuberay-metrics.ts), on the real
// kube-apiserver: a series appears with its object, follows its status, and is gone with it (KubeRay #3923);
// beside KubeRay (companion mode) none is exported, since KubeRay's operator exports the same names.
import t, { type Test } from 'tap';
import { startController } from '../../controller/main.ts';
import { gcsFtCleanupModule } from '../../controller/gcsft-cleanup/module.ts';
import { rayClusterOperatorModule } from '../../controller/raycluster/module.ts';
import { rayJobModule } from '../../controller/rayjob/module.ts';
import { PODS } from '../../kube/resources.ts';
import { RAYCLUSTERS, RAYJOBS } from '../../src/types.ts';
import { env, metricsOf, quiet, until, type Env } from '../helpers/harness.ts';
import { kuberaySample } from '../raycluster/samples.ts';

async function controller(tt: Test, e: Env, companion: 'on' | 'off', lease?: { identity: string }) {
  const c = await startController({
    kubeConfig: e.ns.kubeConfig,
    watchNamespace: e.ns.name,
    ...(lease ? { leaderElect: true, leaseNamespace: e.ns.name, identity: lease.identity, retryPeriodMs: 500 } : {}),
    modules: [gcsFtCleanupModule, rayClusterOperatorModule, rayJobModule],
    companion,
    env: {},
    logger: quiet,
    healthPort: 0,
    healthHost: '127.0.0.1',
    moduleFlags: { 'cleanup-image': 'raykeeper:test' },
  });
  tt.teardown(() => c.stop());
  return c;
}

/** The lines of `name` whose labels mention `text` (a name or uid). */
function series(text: string, name: string, mention: string): string[] {
  return text.split('\n').filter((l) => l.startsWith(`${name}{`) && l.includes(mention));
}

t.test('standalone: kuberay_cluster_* and kuberay_job_* follow their objects and go with them', async (tt) => {
  const e = await env(tt);
  const c = await controller(tt, e, 'off');
  const port = c.port!;
  const created = await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, kuberaySample());
  const uid = created.metadata.uid!;
  const info = await until(async () => series(await metricsOf(port), 'kuberay_cluster_info', uid)[0], 'kuberay_cluster_info');
  tt.equal(info, `kuberay_cluster_info{name="raycluster-kuberay",namespace="${e.ns.name}",uid="${uid}",owner_kind="None"} 1`);
  tt.same(series(await metricsOf(port), 'kuberay_cluster_condition_provisioned', uid), [
    `kuberay_cluster_condition_provisioned{name="raycluster-kuberay",namespace="${e.ns.name}",uid="${uid}",condition="false"} 1`,
  ]);
  tt.same(series(await metricsOf(port), 'kuberay_cluster_provisioned_duration_seconds', uid), [], 'no duration before provisioned');

  // The kubelet's part: every pod of the cluster Running and Ready; the operator then writes Provisioned.
  const pods = await until(async () => {
    const list = (await e.kube.list({ ...PODS, namespace: e.ns.name }, { labelSelector: 'ray.io/cluster=raycluster-kuberay' })).items;
    return list.length >= 2 ? list : undefined;
  }, 'the head and worker pods');
  let ip = 10;
  for (const p of pods)
    await e.kube.patch(
      { ...PODS, namespace: e.ns.name, name: p.metadata.name!, subresource: 'status' },
      { status: { phase: 'Running', podIP: `10.0.0.${ip++}`, conditions: [{ type: 'Ready', status: 'True' }] } },
      'application/merge-patch+json',
    );
  const duration = await until(
    async () => series(await metricsOf(port), 'kuberay_cluster_provisioned_duration_seconds', uid)[0],
    'kuberay_cluster_provisioned_duration_seconds',
  );
  const seconds = Number(duration.split(' ').pop());
  tt.ok(seconds >= 0 && seconds < 120, `provisioned after ${seconds} s`);
  tt.match(series(await metricsOf(port), 'kuberay_cluster_condition_provisioned', uid)[0], /condition="true"\} 1$/);

  const job = await e.kube.create(
    { ...RAYJOBS, namespace: e.ns.name },
    {
      apiVersion: 'ray.io/v1',
      kind: 'RayJob',
      metadata: { name: 'metrics-job' },
      spec: { entrypoint: 'python -c "print(1)"', rayClusterSpec: kuberaySample().spec },
    },
  );
  const jobUid = job.metadata.uid!;
  const status = await until(async () => {
    const line = series(await metricsOf(port), 'kuberay_job_deployment_status', jobUid)[0];
    return line?.includes('deployment_status="Initializing"') ? line : undefined;
  }, 'kuberay_job_deployment_status Initializing');
  tt.equal(
    status,
    `kuberay_job_deployment_status{name="metrics-job",namespace="${e.ns.name}",uid="${jobUid}",deployment_status="Initializing"} 1`,
  );
  tt.same(series(await metricsOf(port), 'kuberay_job_info', jobUid), [
    `kuberay_job_info{name="metrics-job",namespace="${e.ns.name}",uid="${jobUid}"} 1`,
  ]);
  // The RayJob's own cluster is counted as RayJob-made.
  await until(
    async () => (await metricsOf(port)).split('\n').some((l) => l.startsWith('kuberay_cluster_info{') && l.includes('owner_kind="RayJob"')),
    "the RayJob's RayCluster in kuberay_cluster_info with owner_kind RayJob",
  );

  await e.kube.delete({ ...RAYJOBS, namespace: e.ns.name, name: 'metrics-job' });
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'raycluster-kuberay' });
  await until(async () => {
    const text = await metricsOf(port);
    return series(text, 'kuberay_job_info', jobUid).length === 0 && series(text, 'kuberay_cluster_info', uid).length === 0;
  }, 'the series of the deleted RayJob and RayCluster to go');
  const text = await metricsOf(port);
  for (const name of [
    'kuberay_job_deployment_status',
    'kuberay_cluster_condition_provisioned',
    'kuberay_cluster_provisioned_duration_seconds',
  ])
    tt.same([...series(text, name, jobUid), ...series(text, name, uid)], [], `${name}: gone with its object`);
});

t.test('beside KubeRay (companion mode): no kuberay_* metric of ours', async (tt) => {
  const e = await env(tt);
  const c = await controller(tt, e, 'on');
  await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, kuberaySample());
  const text = await metricsOf(c.port!);
  tt.match(text, /raykeeper_/, 'the metrics endpoint answers');
  tt.same(
    text.split('\n').filter((l) => l.startsWith('kuberay_') || l.startsWith('# HELP kuberay_')),
    [],
    'KubeRay exports these names itself',
  );
});

t.test('two replicas: only the leader exports the cache-derived series (a standby would double every sum)', async (tt) => {
  const e = await env(tt);
  const a = await controller(tt, e, 'off', { identity: 'replica-a' });
  await until(() => a.manager.isLeader(), 'replica-a to lead');
  const b = await controller(tt, e, 'off', { identity: 'replica-b' });
  const created = await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, kuberaySample());
  const uid = created.metadata.uid!;
  await until(async () => series(await metricsOf(a.port!), 'kuberay_cluster_info', uid).length === 1, "the leader's series");
  // The standby caches the same cluster (its informers run) but exports nothing for it.
  await until(() => b.manager.informers.all().every((i) => i.hasSynced()), "the standby's caches to sync");
  tt.equal(b.manager.isLeader(), false, 'replica-b stands by');
  tt.same(series(await metricsOf(b.port!), 'kuberay_cluster_info', uid), [], 'no kuberay_cluster_info on the standby');
  tt.same(series(await metricsOf(b.port!), 'kuberay_cluster_condition_provisioned', uid), [], 'nor any other cached series');
});
