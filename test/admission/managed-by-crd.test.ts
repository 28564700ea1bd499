// spec.managedBy is judged by the CRD, as in KubeRay: our CRDs (manifests/crds, the chart's copies) carry
// KubeRay v1.6.2's CEL rules with its messages, compared here with its CRDs. On the real kube-apiserver, with
// both of our webhooks registered for the namespace, an unsupported value is refused with 422 Invalid
// (client-go's errors.IsInvalid, which KubeRay's TestRayClusterManagedBy and TestRayJobClusterSelector
// check), never with our webhook's 403: CRD schema validation runs before validating webhooks. A set value
// is immutable (422); setting it on, or removing it from, an existing object passes, as with KubeRay's CRD
// (a CEL transition rule is not evaluated when the old or the new object lacks the field).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { MERGE_PATCH } from '../../kube/client.ts';
import { RAYCLUSTERS, RAYCRONJOBS, RAYJOBS } from '../../src/types.ts';
import { metricTextSum } from '../../bench/controller.ts';
import { env } from '../helpers/harness.ts';
import { refusal, registerWebhooks } from '../helpers/webhook.ts';
import { kubeRayCrds } from '../kuberay/helpers.ts';

type Schema = { properties?: Record<string, Schema>; 'x-kubernetes-validations'?: Array<{ rule: string; message?: string }> };

const CRDS = {
  rayclusters: 'ray.io_rayclusters.yaml',
  rayjobs: 'ray.io_rayjobs.yaml',
  raycronjobs: 'ray.io_raycronjobs.yaml',
} as const;

/** Every spec path KubeRay's CRDs put managedBy rules on. */
const MANAGED_BY_PATHS: Array<[keyof typeof CRDS, string[]]> = [
  ['rayclusters', ['spec', 'managedBy']],
  ['rayjobs', ['spec', 'managedBy']],
  ['rayjobs', ['spec', 'rayClusterSpec', 'managedBy']],
  ['raycronjobs', ['spec', 'jobTemplate', 'managedBy']],
  ['raycronjobs', ['spec', 'jobTemplate', 'rayClusterSpec', 'managedBy']],
];

function schema(dir: string, file: string): Schema {
  return parse(readFileSync(join(dir, file), 'utf8')).spec.versions[0].schema.openAPIV3Schema as Schema;
}

function rulesAt(root: Schema, path: string[]): Array<{ rule: string; message?: string }> | undefined {
  let node: Schema | undefined = root;
  for (const p of path) node = node?.properties?.[p];
  const rules = node?.['x-kubernetes-validations'];
  return rules?.map((r) => ({ rule: r.rule, message: r.message })).sort((a, b) => a.rule.localeCompare(b.rule));
}

const VALUE_MESSAGE = "the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'";

t.test("our CRDs' managedBy rules are KubeRay v1.6.2's, path by path, and the chart's CRDs are the same files", async (t) => {
  const kuberay = kubeRayCrds();
  for (const [kind, path] of MANAGED_BY_PATHS) {
    const ours = rulesAt(schema(join(REPO_ROOT, 'manifests', 'crds'), CRDS[kind]), path);
    const theirs = rulesAt(schema(kuberay, CRDS[kind]), path);
    t.ok(theirs && theirs.length === 2, `KubeRay's ${kind} CRD has the two rules at ${path.join('.')}`);
    t.same(ours, theirs, `${kind} ${path.join('.')}`);
  }
  for (const file of Object.values(CRDS)) {
    t.equal(
      readFileSync(join(REPO_ROOT, 'charts', 'raykeeper', 'crds', file), 'utf8'),
      readFileSync(join(REPO_ROOT, 'manifests', 'crds', file), 'utf8'),
      `charts/raykeeper/crds/${file}`,
    );
  }
});

const head = { rayStartParams: {}, template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.53.0' }] } } };

function cluster(name: string, managedBy?: string) {
  return {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: { name },
    spec: { ...(managedBy === undefined ? {} : { managedBy }), headGroupSpec: head },
  };
}

function job(name: string, spec: Record<string, unknown>) {
  return {
    apiVersion: 'ray.io/v1',
    kind: 'RayJob',
    metadata: { name },
    spec: { entrypoint: 'python -c "print(1)"', rayClusterSpec: { headGroupSpec: head }, ...spec },
  };
}

t.test('the real API server with our CRDs and both webhooks: 422 Invalid from the CRD, never our 403', async (t) => {
  const e = await env(t);
  const webhook = await registerWebhooks(t, e);
  const denials = async () => metricTextSum(await webhook.metrics(), 'raykeeper_webhook_validations_total', /result="denied"/);
  const deniedBefore = await denials();
  const clusters = { ...RAYCLUSTERS, namespace: e.ns.name };
  const jobs = { ...RAYJOBS, namespace: e.ns.name };
  const cronJobs = { ...RAYCRONJOBS, namespace: e.ns.name };

  const invalid = async (what: string, write: Promise<unknown>, field: string, value: string, message: string) => {
    const err = await refusal(write);
    t.equal(err.statusCode, 422, `${what}: 422`);
    t.equal(err.reason, 'Invalid', `${what}: reason Invalid (errors.IsInvalid)`);
    t.match(
      err.status?.message ?? '',
      ` is invalid: ${field}: Invalid value: "${value}": ${message}`,
      `${what}: KubeRay's message on ${field}`,
    );
    t.notMatch(err.status?.message ?? '', /admission webhook/, `${what}: not a webhook's answer`);
  };

  // KubeRay's e2e values: TestRayClusterManagedBy, TestRayJobClusterSelector.
  await invalid(
    'RayCluster',
    e.kube.create(clusters, cluster('raycluster-fail', 'controller.com/not-supported')),
    'spec.managedBy',
    'controller.com/not-supported',
    VALUE_MESSAGE,
  );
  await invalid(
    'RayJob',
    e.kube.create(jobs, job('managed-externally-invalid', { managedBy: 'invalid.com/controller' })),
    'spec.managedBy',
    'invalid.com/controller',
    VALUE_MESSAGE,
  );
  await invalid(
    "RayJob's rayClusterSpec",
    e.kube.create(jobs, job('nested-invalid', { rayClusterSpec: { managedBy: 'invalid.com/controller', headGroupSpec: head } })),
    'spec.rayClusterSpec.managedBy',
    'invalid.com/controller',
    VALUE_MESSAGE,
  );
  await invalid(
    "RayCronJob's jobTemplate",
    e.kube.create(cronJobs, {
      apiVersion: 'ray.io/v1',
      kind: 'RayCronJob',
      metadata: { name: 'cron-invalid' },
      spec: { schedule: '*/5 * * * *', jobTemplate: job('x', { managedBy: 'invalid.com/controller' }).spec },
    }),
    'spec.jobTemplate.managedBy',
    'invalid.com/controller',
    VALUE_MESSAGE,
  );

  // Immutable once set (KubeRay's "Should not to be able to change managedBy field as it's immutable").
  await e.kube.create(clusters, cluster('raycluster-skip', 'kueue.x-k8s.io/multikueue'));
  await invalid(
    'RayCluster managedBy changed',
    e.kube.patch({ ...clusters, name: 'raycluster-skip' }, { spec: { managedBy: 'ray.io/kuberay-operator' } }, MERGE_PATCH),
    'spec.managedBy',
    'ray.io/kuberay-operator',
    'the managedBy field is immutable',
  );
  t.equal(
    (await e.kube.get({ ...clusters, name: 'raycluster-skip' })).spec!.managedBy,
    'kueue.x-k8s.io/multikueue',
    'the stored value is kept',
  );
  await e.kube.create(jobs, job('managed-by-kueue', { managedBy: 'kueue.x-k8s.io/multikueue' }));
  await invalid(
    'RayJob managedBy changed',
    e.kube.patch({ ...jobs, name: 'managed-by-kueue' }, { spec: { managedBy: 'ray.io/kuberay-operator' } }, MERGE_PATCH),
    'spec.managedBy',
    'ray.io/kuberay-operator',
    'the managedBy field is immutable',
  );

  // What KubeRay's CRD lets through, we let through: set on an existing object, then removed.
  await e.kube.create(clusters, cluster('late'));
  const set = await e.kube.patch({ ...clusters, name: 'late' }, { spec: { managedBy: 'kueue.x-k8s.io/multikueue' } }, MERGE_PATCH);
  t.equal(set.spec!.managedBy, 'kueue.x-k8s.io/multikueue', 'set on an existing RayCluster: accepted');
  const unset = await e.kube.patch({ ...clusters, name: 'late' }, { spec: { managedBy: null } }, MERGE_PATCH);
  t.equal(unset.spec!.managedBy, undefined, 'removed: accepted');
  await e.kube.create(jobs, job('late-job', {}));
  const jobSet = await e.kube.patch({ ...jobs, name: 'late-job' }, { spec: { managedBy: 'ray.io/kuberay-operator' } }, MERGE_PATCH);
  t.equal(jobSet.spec!.managedBy, 'ray.io/kuberay-operator', 'set on an existing RayJob: accepted');

  t.equal(await denials(), deniedBefore, 'our validating webhook refused none of these writes');
});
