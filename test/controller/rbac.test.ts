// The controller under the RBAC the project ships (manifests/base/rbac-controller.yaml), by impersonating
// a ServiceAccount bound to exactly those rules: the whole deletion path works; in a terminating namespace
// the in-process cleanup reads a Redis password held in a Secret (the shipped get on Secrets) and cleans,
// while one held in a ConfigMap (not granted: manifests/optional/controller-secret-reader) means a 403, so
// the fallback is blocked and the timeout releases the finalizer; a RayJob on a token-auth cluster gets its
// dashboard token and its status is read, as under KubeRay's default install. With the Secret grant really
// missing (the shipped rules less get on Secrets), that RayJob is told at once, in one Warning, why.
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments, stringify } from 'yaml';
import { startController } from '../../controller/main.ts';
import { gcsFtCleanupModule } from '../../controller/gcsft-cleanup/module.ts';
import { KubeClient } from '../../kube/client.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { kubeconfigDocument } from '../../localcluster/control-plane.ts';
import {
  createCluster,
  createPods,
  env,
  events,
  FINALIZER,
  getCluster,
  jobRunner,
  listJobs,
  quiet,
  rayCluster,
  rayKeys,
  redis,
  seedRay,
  until,
  type Env,
} from '../helpers/harness.ts';
import { CONFIGMAPS, NAMESPACES, PODS, ROLEBINDINGS, ROLES, SECRETS, SERVICEACCOUNTS, type Resource } from '../../kube/resources.ts';
import type { ApiObject } from '../../kube/model.ts';
import { startFakeDashboard } from '../rayjob/helpers/fake-dashboard.ts';
import { rayClusterOperatorModule } from '../../controller/raycluster/module.ts';
import { rayJobModule } from '../../controller/rayjob/module.ts';
import { metricTextSum } from '../../bench/controller.ts';
import { RAYCLUSTERS, RAYJOBS } from '../../src/types.ts';
import { kuberaySample } from '../raycluster/samples.ts';

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

function shippedRules(): { cluster: Rule[]; leases: Rule[] } {
  const docs = parseAllDocuments(readFileSync(join(REPO_ROOT, 'manifests', 'base', 'rbac-controller.yaml'), 'utf8')).map(
    (d) => d.toJS() as { kind: string; rules?: Rule[] },
  );
  const cluster = docs.find((d) => d.kind === 'ClusterRole')?.rules;
  const leases = docs.find((d) => d.kind === 'Role')?.rules;
  if (!cluster || !leases) throw new Error('rbac-controller.yaml: ClusterRole or Role missing');
  return { cluster, leases };
}

/** The shipped rules less get on Secrets: an install whose Secret grant was removed. */
function withoutSecretGet(rules: Rule[]): Rule[] {
  return rules
    .map((r) => (r.resources.includes('secrets') ? { ...r, verbs: r.verbs.filter((v) => v !== 'get') } : r))
    .filter((r) => r.verbs.length > 0);
}

/** A ServiceAccount in the test namespace with the shipped rules (or `edit` of them); a KubeConfig impersonating it. */
async function controllerIdentity(tt: Test, e: Env, edit: (rules: Rule[]) => Rule[] = (r) => r): Promise<KubeConfig> {
  const shipped = shippedRules();
  const cluster = edit(shipped.cluster);
  const leases = shipped.leases;
  const sa = 'raykeeper-controller';
  const id = `raykeeper-controller-${e.ns.name}`;
  const subject = [{ kind: 'ServiceAccount', name: sa, namespace: e.ns.name }];
  const rbac = (plural: string, namespaced = false) => ({
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural,
    namespace: namespaced ? e.ns.name : undefined,
  });
  await e.kube.create({ ...SERVICEACCOUNTS, namespace: e.ns.name }, { metadata: { name: sa } });
  await e.kube.create(rbac('clusterroles'), { metadata: { name: id }, rules: cluster });
  await e.kube.create(rbac('clusterrolebindings'), {
    metadata: { name: id },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: id },
    subjects: subject,
  });
  await e.kube.create(rbac('roles', true), { metadata: { name: 'leader-election' }, rules: leases });
  await e.kube.create(rbac('rolebindings', true), {
    metadata: { name: 'leader-election' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'leader-election' },
    subjects: subject,
  });
  tt.teardown(async () => {
    await e.kube.delete({ ...rbac('clusterrolebindings'), name: id });
    await e.kube.delete({ ...rbac('clusterroles'), name: id });
  });
  const doc = kubeconfigDocument(e.ns.cp.info, e.ns.name) as { users: Array<{ user: Record<string, unknown> }> };
  doc.users[0]!.user.as = `system:serviceaccount:${e.ns.name}:${sa}`;
  const kc = new KubeConfig();
  kc.loadFromString(stringify(doc));
  return kc;
}

t.test('with only the shipped RBAC: finalizer, pods, Job, events, Lease, release all work', async (tt) => {
  const e = await env(tt);
  const { server, client } = await redis(tt);
  const kc = await controllerIdentity(tt, e);
  // Sanity: the identity really is restricted.
  const restricted = new KubeClient(kc);
  tt.teardown(() => restricted.close());
  const forbidden = await restricted.get({ ...SECRETS, namespace: e.ns.name }).then(
    () => false,
    (err: { statusCode?: number }) => err.statusCode === 403,
  );
  tt.ok(forbidden, 'the impersonated controller cannot list Secrets');
  await jobRunner(tt, e);
  const c = await startController({
    kubeConfig: kc,
    watchNamespace: e.ns.name,
    leaderElect: true,
    leaseNamespace: e.ns.name,
    leaseName: 'rk',
    leaseDurationMs: 3000,
    renewDeadlineMs: 2000,
    retryPeriodMs: 400,
    modules: [gcsFtCleanupModule],
    moduleFlags: { 'cleanup-image': 'raykeeper:test' },
    env: {},
    logger: quiet,
  });
  tt.teardown(() => c.stop());
  const created = await createCluster(e, rayCluster('rbac', `127.0.0.1:${server.port}`));
  await seedRay(client, created.metadata.uid!);
  await createPods(e, created);
  await until(async () => (await getCluster(e, 'rbac'))?.metadata.finalizers?.includes(FINALIZER), 'finalizer added under RBAC');
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'rbac' });
  await until(async () => (await getCluster(e, 'rbac')) === undefined, 'deleted under RBAC');
  tt.same(await rayKeys(client, created.metadata.uid!), []);
  tt.equal((await listJobs(e)).length, 1);
  tt.equal((await events(e, 'RedisCleanupSucceeded')).length, 1, 'events can be written');
  tt.equal(c.manager.isLeader(), true, 'leader election works with the namespaced Lease role');
});

t.test(
  'namespace terminating: a Redis password in a Secret is read (cleaned in-process), one in a ConfigMap is not (403: blocked, released at the timeout)',
  async (tt) => {
    const e = await env(tt);
    const { server, client } = await redis(tt, { password: 'hidden' });
    const kc = await controllerIdentity(tt, e);
    await e.kube.create({ ...SECRETS, namespace: e.ns.name }, { metadata: { name: 'redis-auth' }, stringData: { password: 'hidden' } });
    await e.kube.create({ ...CONFIGMAPS, namespace: e.ns.name }, { metadata: { name: 'redis-auth' }, data: { password: 'hidden' } });
    const c = await startController({
      kubeConfig: kc,
      watchNamespace: e.ns.name,
      modules: [gcsFtCleanupModule],
      moduleFlags: {},
      env: {},
      logger: quiet,
    });
    tt.teardown(() => c.stop());
    tt.match(
      await c.manager.ctx.metrics.metrics(),
      /raykeeper_raycluster_finalizer_releases_total\{reason="timeout"\} 0/,
      'every release reason exported at 0 before the first release (an alert reads it with increase())',
    );
    const make = (name: string, ref: Record<string, unknown>) =>
      createCluster(
        e,
        rayCluster(name, `127.0.0.1:${server.port}`, {
          finalizers: [FINALIZER],
          annotations: { 'ray.io/gcs-ft-deletion-timeout': '4' },
          headEnv: [{ name: 'REDIS_PASSWORD', valueFrom: ref }],
        }),
      );
    const fromSecret = await make('from-secret', { secretKeyRef: { name: 'redis-auth', key: 'password' } });
    const fromConfigMap = await make('from-configmap', { configMapKeyRef: { name: 'redis-auth', key: 'password' } });
    for (const x of [fromSecret, fromConfigMap]) await seedRay(client, x.metadata.uid!);
    await e.kube.delete({ ...NAMESPACES, name: e.ns.name });
    for (const name of ['from-secret', 'from-configmap']) await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name });
    await until(async () => (await getCluster(e, 'from-secret')) === undefined, 'the Secret one released', 30_000);
    tt.same(await rayKeys(client, fromSecret.metadata.uid!), [], 'the Secret one: cleaned by the controller itself');
    await until(async () => (await getCluster(e, 'from-configmap')) === undefined, 'the ConfigMap one released at the timeout', 30_000);
    tt.equal(
      (await rayKeys(client, fromConfigMap.metadata.uid!)).length,
      5,
      'the ConfigMap one: not cleaned, the password was out of reach',
    );
    const metrics = await c.manager.ctx.metrics.metrics();
    tt.match(metrics, /raykeeper_raycluster_inprocess_cleanups_total\{result="succeeded"\} 1/, 'one in-process cleanup');
    tt.match(metrics, /raykeeper_raycluster_inprocess_cleanups_total\{result="blocked"\} [1-9]/, 'the other blocked');
    tt.match(metrics, /raykeeper_raycluster_finalizer_releases_total\{reason="timeout"\} 1/);
  },
);

/** A namespace with the RayCluster operator running as the controller's ServiceAccount (the shipped RBAC only, or `edit` of it). */
async function operatorUnderShippedRbac(tt: Test, edit?: (rules: Rule[]) => Rule[]): Promise<Env> {
  const e = await env(tt);
  const kc = await controllerIdentity(tt, e, edit);
  const c = await startController({
    kubeConfig: kc,
    watchNamespace: e.ns.name,
    modules: [rayClusterOperatorModule],
    env: {},
    logger: quiet,
    retry: { baseMs: 100, maxMs: 1000, jitter: 0.2 },
  });
  tt.teardown(() => c.stop());
  return e;
}

t.test(
  "with only the shipped RBAC: the operator creates an autoscaling cluster's ServiceAccount, Role and RoleBinding (escalation prevention passes)",
  async (tt) => {
    const e = await operatorUnderShippedRbac(tt);
    const sample = kuberaySample();
    sample.spec!.enableInTreeAutoscaling = true;
    await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, sample);
    const name = sample.metadata.name!;
    for (const ref of [SERVICEACCOUNTS, ROLES, ROLEBINDINGS] as Resource<ApiObject>[])
      await until(
        () => e.kube.get({ ...ref, namespace: e.ns.name, name }).catch(() => undefined),
        `${ref.plural}/${name} created under RBAC`,
      );
    await until(
      async () => (await e.kube.list({ ...PODS, namespace: e.ns.name }, { labelSelector: `ray.io/cluster=${name}` })).items.length === 2,
      'then the head and worker pods',
    );
    tt.same(await events(e, 'FailedToCreateRole'), [], 'no FailedToCreateRole');
  },
);

/** Two token-auth clusters: one whose Secret we generate, one naming a Secret that does not exist. */
async function tokenClusters(e: Env): Promise<void> {
  const generated = kuberaySample();
  generated.metadata.name = 'token-gen';
  (generated.spec as Record<string, unknown>).authOptions = { mode: 'token' };
  const given = kuberaySample();
  given.metadata.name = 'token-given';
  (given.spec as Record<string, unknown>).authOptions = { mode: 'token', secretName: 'not-there' };
  for (const x of [generated, given]) await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, x);
}

const podsOf = async (e: Env, name: string) =>
  (await e.kube.list({ ...PODS, namespace: e.ns.name }, { labelSelector: `ray.io/cluster=${name}` })).items.length;

t.test('token auth with only the shipped RBAC (Secrets: create, get): ours created, a given one checked before any pod', async (tt) => {
  const e = await operatorUnderShippedRbac(tt);
  await tokenClusters(e);
  const secret = await until(() => e.kube.getOrUndefined({ ...SECRETS, namespace: e.ns.name, name: 'token-gen' }), 'the generated Secret');
  tt.same(Object.keys(secret.data ?? {}), ['auth_token']);
  await until(async () => (await podsOf(e, 'token-gen')) === 2, 'token-gen: head and worker');
  const [notFound] = await until(async () => {
    const found = await events(e, 'AuthSecretNotFound');
    return found.length > 0 ? found : undefined;
  }, 'token-given: AuthSecretNotFound');
  tt.match(notFound!.message, /Secret .*\/not-there named by spec.authOptions.secretName not found/);
  tt.equal(await podsOf(e, 'token-given'), 0, 'token-given: no pod while its Secret is missing');
  tt.equal(await e.kube.getOrUndefined({ ...SECRETS, namespace: e.ns.name, name: 'not-there' }), undefined, 'a given Secret is never made');
  tt.equal((await events(e, 'FailedToGetAuthSecret')).length, 0);
  tt.equal((await events(e, 'FailedToCreateAuthSecret')).length, 0);
});

t.test('token auth where the RBAC lacks get on Secrets (403 on reading): as KubeRay, ours created, a given one not checked', async (tt) => {
  const e = await operatorUnderShippedRbac(tt, withoutSecretGet);
  await tokenClusters(e);
  const secret = await until(() => e.kube.getOrUndefined({ ...SECRETS, namespace: e.ns.name, name: 'token-gen' }), 'the generated Secret');
  tt.same(Object.keys(secret.data ?? {}), ['auth_token']);
  for (const name of ['token-gen', 'token-given'])
    await until(async () => (await podsOf(e, name)) === 2, `${name}: head and worker (unchecked without get)`);
  tt.equal((await events(e, 'FailedToGetAuthSecret')).length, 0, 'a 403 on reading is expected, not an error');
  tt.equal((await events(e, 'FailedToCreateAuthSecret')).length, 0);
});

/**
 * A ready token-auth cluster `token-shared` (no operator runs here to say otherwise) with its Secret, the
 * RayJob controller running as the controller's ServiceAccount, and an HTTPMode RayJob selecting the cluster.
 */
async function tokenRayJob(tt: Test, e: Env, kc: KubeConfig, dashboardUrl: string, token: string) {
  const cluster = kuberaySample();
  cluster.metadata.name = 'token-shared';
  (cluster.spec as Record<string, unknown>).authOptions = { mode: 'token', secretName: 'token-shared' };
  const created = await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, cluster);
  await e.kube.replace(
    { ...RAYCLUSTERS, namespace: e.ns.name, name: 'token-shared', subresource: 'status' },
    { ...created, status: { state: 'ready' } },
  );
  await e.kube.create({ ...SECRETS, namespace: e.ns.name }, { metadata: { name: 'token-shared' }, stringData: { auth_token: token } });
  const c = await startController({
    kubeConfig: kc,
    watchNamespace: e.ns.name,
    modules: [rayJobModule],
    moduleFlags: { 'rayjob-dashboard-url-template': dashboardUrl },
    env: {},
    logger: quiet,
  });
  tt.teardown(() => c.stop());
  await e.kube.create(
    { ...RAYJOBS, namespace: e.ns.name },
    {
      apiVersion: 'ray.io/v1',
      kind: 'RayJob',
      metadata: { name: 'uses-token' },
      spec: { entrypoint: 'true', submissionMode: 'HTTPMode', clusterSelector: { 'ray.io/cluster': 'token-shared' } },
    },
  );
  return c;
}

t.test(
  'a RayJob on a token-auth cluster with only the shipped RBAC: the token is read, the job submitted, its status read to Complete',
  async (tt) => {
    const e = await env(tt);
    const kc = await controllerIdentity(tt, e);
    const dashboard = await startFakeDashboard();
    tt.teardown(() => dashboard.close());
    const token = 'the-token-itself';
    dashboard.token = token; // Ray's token auth: 401 without the token, 403 with another one.
    await tokenRayJob(tt, e, kc, dashboard.url, token);
    const job = await until(
      async () => {
        const j = await e.kube.get({ ...RAYJOBS, namespace: e.ns.name, name: 'uses-token' });
        return j.status?.jobDeploymentStatus === 'Complete' || j.status?.jobDeploymentStatus === 'Failed' ? j : undefined;
      },
      'the RayJob finished',
      60_000,
    );
    tt.equal(job.status?.jobDeploymentStatus, 'Complete');
    tt.equal(job.status?.jobStatus, 'SUCCEEDED', "the Ray job's status, read from the token-auth dashboard");
    tt.equal(dashboard.submissions.length, 1, 'submitted once, with the token (the dashboard refuses a request without it)');
    tt.equal((await events(e, 'FailedToGetAuthSecret')).length, 0, 'no FailedToGetAuthSecret');
  },
);

t.test(
  'a RayJob on a token-auth cluster where the RBAC lacks get on Secrets: one Warning FailedToGetAuthSecret naming the grant, nothing submitted',
  async (tt) => {
    const e = await env(tt);
    const kc = await controllerIdentity(tt, e, withoutSecretGet);
    let asked = 0;
    const dashboard = createServer((_req, res) => {
      asked++;
      res.writeHead(500).end();
    });
    await new Promise<void>((resolve) => dashboard.listen(0, '127.0.0.1', resolve));
    tt.teardown(() => new Promise<void>((resolve) => dashboard.close(() => resolve())));
    const port = (dashboard.address() as { port: number }).port;
    const token = 'the-token-itself';
    const c = await tokenRayJob(tt, e, kc, `http://127.0.0.1:${port}`, token);
    const [warning] = await until(async () => {
      const found = await events(e, 'FailedToGetAuthSecret');
      return found.length > 0 ? found : undefined;
    }, 'FailedToGetAuthSecret on the RayJob');
    tt.equal(warning!.type, 'Warning');
    tt.equal(warning!.involvedObject.kind, 'RayJob', 'on the RayJob');
    tt.match(
      warning!.message,
      /forbidden; the controller's RBAC must grant get on Secrets in this namespace \(manifests\/base\/rbac-controller.yaml/,
      'says why and what to grant',
    );
    tt.notMatch(warning!.message, new RegExp(token), 'no token in it');
    // Each poll (every 3 s) meets the 403 again and counts a failed dashboard read; it says so once: after
    // three such polls the Event is neither repeated nor counted up.
    await until(
      async () =>
        metricTextSum(
          await c.manager.ctx.metrics.metrics(),
          'raykeeper_rayjob_dashboard_requests_total',
          /operation="get",outcome="error"/,
        ) >= 3,
      'three polls that could not read the token',
      30_000,
    );
    await c.manager.ctx.events.flush();
    const after = await events(e, 'FailedToGetAuthSecret');
    tt.equal(after.length, 1, 'one Event');
    tt.equal(after[0]!.count ?? 1, 1, 'told once, not every retry');
    const job = await e.kube.get({ ...RAYJOBS, namespace: e.ns.name, name: 'uses-token' });
    // HTTPMode goes Running first and submits from there (KubeRay's order); the status check's timeout, not this, would fail it.
    tt.equal(job.status?.jobDeploymentStatus, 'Running', 'Running, not Failed: waiting for the token');
    tt.equal(job.status?.jobStatus ?? '', '', 'and nothing submitted');
    tt.equal(asked, 0, 'the dashboard was never asked without its token');
  },
);
