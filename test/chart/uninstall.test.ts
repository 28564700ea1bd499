// `helm uninstall` of the chart on the real kube-apiserver of the tests, with its pre-delete hook RUN: there
// is no kubelet or job controller here, so the job runner (localcluster/job-runner.ts) stands in for them. It
// runs the hook Job's container command (`raykeeper uninstall ...`, this repository's CLI) as a local process
// with the env the kubelet would give it, and the API identity of the hook's own ServiceAccount (a kubeconfig
// impersonating it: the chart's hook RBAC is what is exercised), and then the cleanup Job that command creates
// (`raykeeper redis-cleanup` against a real redis-server). Helm itself waits for the hook Job as it would on a
// cluster. What this proves, for Helm 3 and 4: helm install; a GCS-FT RayCluster live and one being deleted in
// the watched namespace; helm uninstall succeeds; the deleting one's Redis data is cleaned and it is gone; the
// live one keeps its data and loses the finalizer with a Warning that says so, and deleting it then completes
// at once; a RayCluster outside the release's scope is not touched; nothing of the release or its hook is left;
// in companion mode too (Helm 3), where the hook has no RayJob rights and deletes the KubeRay-made head pod.
// What it does not prove: that a kubelet pulls the image and runs the pod (test/node/ray.cluster.ts does, on
// the real node).
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { stringify } from 'yaml';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Discovery, parseManifests } from '../../localcluster/apply.ts';
import { kubeconfigDocument } from '../../localcluster/control-plane.ts';
import { defaultBaseEnv, JobRunner } from '../../localcluster/job-runner.ts';
import { kubeconfigFile, testNamespace } from '../helpers/control-plane.ts';
import { FINALIZER, quiet, rayCluster, rayKeys, redis, seedRay } from '../helpers/harness.ts';
import { PODS } from '../../kube/resources.ts';
import { RAYCLUSTERS, type RayCluster } from '../../src/types.ts';
import { eventsOf } from '../uninstall/helpers.ts';
import { CHART_DIR, find, HELM_MAJORS, type HelmMajor, helmAsync, helmOk, key, requireHelm, template, valuesFile } from './helm.ts';

requireHelm();

const STORAGE_NS = 'ray.io/external-storage-namespace';

const SCENARIOS: Array<{ major: HelmMajor; companion: boolean }> = [
  ...HELM_MAJORS.map((major) => ({ major, companion: false })),
  // Companion mode (KubeRay makes the pods; here a head pod as KubeRay would have made it): the hook's RBAC
  // has no RayJob rule (raykeeper wrote no New there), and the cleanup deletes the pods itself.
  { major: 3, companion: true },
];

for (const { major, companion } of SCENARIOS) {
  t.test(
    `helm ${major}${companion ? ', companion mode' : ''}: install, GCS-FT RayClusters, uninstall: the hook finishes or releases every finalizer`,
    async (t) => {
      const rel = await testNamespace(t, { 'pod-security.kubernetes.io/enforce': 'restricted' });
      const work = await testNamespace(t);
      const outside = await testNamespace(t);
      const kube = rel.kube;
      const { server, client } = await redis(t);
      const address = `${server.host}:${server.port}`;
      const kubeconfig = await kubeconfigFile(t, rel.cp, rel.name);
      const release = `rk-${randomBytes(3).toString('hex')}`;
      const fullname = `${release}-raykeeper`;
      // Scoped to `work` (a cluster-wide release's hook would act on the other tests' RayClusters); its
      // webhooks match no namespace (nothing runs them here).
      const values = valuesFile({
        controller: { watchNamespaces: [work.name] },
        webhook: { namespaceSelector: { matchLabels: { 'raykeeper.test/helm-release': release } } },
        uninstall: { timeoutSeconds: 90 },
        companion: { enabled: companion },
      });
      const helm = (...args: string[]) => [...args, '--namespace', rel.name, '--kubeconfig', kubeconfig];
      t.teardown(() => helmAsync(helm('uninstall', release, '--ignore-not-found', '--no-hooks'), major));
      helmOk(helm('install', release, CHART_DIR, '-f', values), major);
      const manifest = parseManifests(helmOk(helm('get', 'manifest', release), major));

      const create = (ns: string, body: RayCluster) => kube.create({ ...RAYCLUSTERS, namespace: ns }, body);
      await create(work.name, rayCluster('live', address, { finalizers: [FINALIZER], annotations: { [STORAGE_NS]: 'live-data' } }));
      await create(work.name, rayCluster('going', address, { finalizers: [FINALIZER], annotations: { [STORAGE_NS]: 'going-data' } }));
      const elsewhere = await create(outside.name, rayCluster('elsewhere', address, { finalizers: [FINALIZER] }));
      const liveKeys = (await seedRay(client, 'live-data')).sort();
      await seedRay(client, 'going-data');
      if (companion) {
        const going = await kube.get({ ...RAYCLUSTERS, namespace: work.name, name: 'going' });
        await kube.create(
          { ...PODS, namespace: work.name },
          {
            metadata: {
              name: 'going-head',
              labels: { 'ray.io/cluster': 'going', 'ray.io/node-type': 'head' },
              ownerReferences: [{ apiVersion: 'ray.io/v1', kind: 'RayCluster', name: 'going', uid: going.metadata.uid, controller: true }],
            },
            spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.40.0' }] },
          },
        );
      }
      await kube.delete({ ...RAYCLUSTERS, namespace: work.name, name: 'going' });

      // The kubelet's part: the hook pod's API identity is its ServiceAccount.
      const doc = kubeconfigDocument(rel.cp.info, rel.name) as { users: Array<{ user: Record<string, unknown> }> };
      doc.users[0]!.user.as = `system:serviceaccount:${rel.name}:${fullname}-uninstall`;
      const asHook = join(t.testdir(), 'kubeconfig');
      await writeFile(asHook, stringify(doc), { mode: 0o600 });
      const runner = new JobRunner({
        kubeConfig: rel.kubeConfig,
        namespaces: [rel.name, work.name],
        baseEnv: { ...defaultBaseEnv(), KUBECONFIG: asHook },
        logger: quiet,
        killGraceMs: 1000,
      });
      await runner.start();
      t.teardown(() => runner.stop());

      const uninstalled = await helmAsync(helm('uninstall', release, '--timeout', '3m'), major);
      const hookLog = runner.output(rel.name, `${fullname}-uninstall`);
      t.equal(uninstalled.status, 0, `helm uninstall succeeded: ${uninstalled.stderr}\nhook log:\n${hookLog}`);
      t.match(
        runner.result(rel.name, `${fullname}-uninstall`),
        { outcome: { kind: 'succeeded' }, exitCode: 0 },
        'the hook Job ran and succeeded',
      );
      for (const line of [
        new RegExp(`deleted MutatingWebhookConfiguration ${fullname}`),
        new RegExp(`scaled Deployment ${rel.name}/${fullname}-controller from 2 to 0 replicas`),
        new RegExp(`scope: namespace ${work.name}`),
        new RegExp(`${work.name}/going: finished: finalizer released by the cleanup \\(RedisCleanupSucceeded`),
        new RegExp(`${work.name}/live: Warning FinalizerReleasedForUninstall`),
      ])
        t.match(hookLog, line, `the hook's log: ${line.source}`);
      if (companion) {
        t.match(hookLog, /RayJobs: not looked at \(not allowed to list them\)/, 'companion: no RayJob rights, none needed');
        t.equal(
          await kube.getOrUndefined({ ...PODS, namespace: work.name, name: 'going-head' }),
          undefined,
          "the cluster's head pod deleted before the cleanup",
        );
      }

      t.equal(
        await kube.getOrUndefined({ ...RAYCLUSTERS, namespace: work.name, name: 'going' }),
        undefined,
        'the deleting cluster is gone',
      );
      t.same(await rayKeys(client, 'going-data'), [], 'its GCS data cleaned by its cleanup Job');
      t.match(
        (await eventsOf(kube, work.name, 'going')).find((e) => e.reason === 'RedisCleanupSucceeded'),
        {
          message: /deleted storage namespace "going-data"/,
        },
      );
      const live = await kube.get({ ...RAYCLUSTERS, namespace: work.name, name: 'live' });
      t.notOk(live.metadata.finalizers?.includes(FINALIZER), 'the live cluster lost the finalizer');
      t.same(await rayKeys(client, 'live-data'), liveKeys, 'and keeps its data');
      t.match(
        (await eventsOf(kube, work.name, 'live')).find((e) => e.reason === 'FinalizerReleasedForUninstall'),
        {
          type: 'Warning',
          message: /the cluster is live, and its GCS data \(storage namespace "live-data" in Redis at .*\) stays.*raykeeper redis-cleanup/,
        },
      );
      await kube.delete({ ...RAYCLUSTERS, namespace: work.name, name: 'live' });
      t.equal(
        await kube.getOrUndefined({ ...RAYCLUSTERS, namespace: work.name, name: 'live' }),
        undefined,
        'deleting it completes at once',
      );
      const kept = await kube.get({ ...RAYCLUSTERS, namespace: outside.name, name: 'elsewhere' });
      t.equal(kept.metadata.resourceVersion, elsewhere.metadata.resourceVersion, 'a RayCluster outside the release scope is untouched');

      const discovery = new Discovery(kube);
      for (const o of manifest) t.equal(await kube.getOrUndefined(await discovery.refOf(o, rel.name)), undefined, `${key(o)} removed`);
      const hooks = template(
        {
          controller: { watchNamespaces: [work.name] },
          webhook: { namespaceSelector: { matchLabels: { x: 'y' } } },
          companion: { enabled: companion },
        },
        { release, namespace: rel.name },
      ).filter((o) => (o.metadata.annotations as Record<string, string> | undefined)?.['helm.sh/hook']);
      t.ok(hooks.length >= 6, `${hooks.length} hook objects`);
      for (const o of hooks)
        t.equal(await kube.getOrUndefined(await discovery.refOf(o, rel.name)), undefined, `hook ${key(o)} deleted after it succeeded`);
    },
  );
}

t.test('the hook as rendered: its scope, its RBAC, its command, its deadline; off when told', async (t) => {
  const all = template({});
  const job = find(all, 'Job', 'raykeeper-uninstall');
  t.match(job.metadata.annotations, {
    'helm.sh/hook': 'pre-delete',
    'helm.sh/hook-weight': '0',
    'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
  });
  const c = job.spec.template.spec.containers[0];
  t.same(c.command, ['raykeeper', 'uninstall']);
  t.same(c.args, [
    '--namespace=$(POD_NAMESPACE)',
    '--controller-deployment=raykeeper-controller',
    '--webhook-configuration=raykeeper',
    '--timeout=240',
    '--added-back-ok',
  ]);
  t.equal(job.spec.activeDeadlineSeconds, 300, 'the command timeout plus a minute');
  t.equal(job.spec.backoffLimit, 0);
  t.equal(job.spec.template.spec.serviceAccountName, 'raykeeper-uninstall');
  t.match(job.spec.template.spec.securityContext, { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
  t.match(c.securityContext, { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
  t.match(c.env, [
    { name: 'POD_NAMESPACE' },
    { name: 'LOG_LEVEL' },
    { name: 'RAYKEEPER_IMAGE', value: 'raykeeper:0.1.0' },
    { name: 'ENABLE_GCS_FT_REDIS_CLEANUP', value: 'true' },
  ]);
  for (const o of all.filter((x) => (x.metadata.annotations as Record<string, string> | undefined)?.['helm.sh/hook'] && x.kind !== 'Job'))
    t.equal((o.metadata.annotations as Record<string, string>)['helm.sh/hook-weight'], '-10', `${key(o)} before the Job`);
  const webhooks = find(all, 'ClusterRole', 'raykeeper-uninstall');
  t.same(webhooks.rules, [
    {
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'],
      resourceNames: ['raykeeper'],
      verbs: ['get', 'delete'],
    },
  ]);
  t.same(find(all, 'Role', 'raykeeper-uninstall-controller').rules[0].resourceNames, ['raykeeper-controller']);
  const clusterRules = find(all, 'ClusterRole', 'raykeeper-uninstall-rayclusters').rules;
  t.notOk(
    clusterRules.some((r: { resources: string[] }) => r.resources.includes('secrets')),
    'no Secrets without the secret reader',
  );

  const scoped = template({ controller: { watchNamespaces: ['team-a'], secretReader: { enabled: true } } });
  t.match(find(scoped, 'Job', 'raykeeper-uninstall').spec.template.spec.containers[0].args, [
    '--namespace=$(POD_NAMESPACE)',
    /./,
    /./,
    /./,
    '--added-back-ok',
    '--watch-namespace=team-a',
  ]);
  const role = find(scoped, 'Role', 'raykeeper-uninstall-rayclusters');
  t.equal(role.metadata.namespace, 'team-a', 'under watchNamespaces the RayCluster rules are a Role in the watched namespace');
  t.ok(
    role.rules.some((r: { resources: string[] }) => r.resources.includes('secrets')),
    'Secrets get with the secret reader, as the controller',
  );
  t.notOk(scoped.some((o) => o.kind === 'ClusterRole' && o.metadata.name === 'raykeeper-uninstall-rayclusters'));

  t.notOk(
    template({ uninstall: { hook: false } }).some((o) => (o.metadata.annotations as Record<string, string> | undefined)?.['helm.sh/hook']),
    'uninstall.hook=false: no hook',
  );
  t.equal(find(template({ uninstall: { timeoutSeconds: 600 } }), 'Job', 'raykeeper-uninstall').spec.activeDeadlineSeconds, 660);
});

t.test('the controller Deployment: RollingUpdate and a PodDisruptionBudget with one leader; Recreate when sharded', async (t) => {
  const one = template({});
  t.same(find(one, 'Deployment', 'raykeeper-controller').spec.strategy, {
    type: 'RollingUpdate',
    rollingUpdate: { maxUnavailable: 0, maxSurge: 1 },
  });
  t.equal(find(one, 'PodDisruptionBudget', 'raykeeper-controller').spec.minAvailable, 1);
  const sharded = template({ controller: { shards: 2 } });
  t.same(find(sharded, 'Deployment', 'raykeeper-controller').spec.strategy, { type: 'Recreate' });
  t.notOk(
    template({ controller: { replicas: 1 } }).some((o) => o.kind === 'PodDisruptionBudget' && o.metadata.name === 'raykeeper-controller'),
    'one replica: no budget (it would block every drain)',
  );
});
