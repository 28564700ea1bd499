// KubeRay's TestRayJob cases "RuntimeEnvYAML is not a valid YAML string" and "RayJob name too long with 48
// characters", and its PreRunningDeadlineSeconds case (a RayJob without entrypoint), on one kube-apiserver with
// KubeRay v1.6.2's CRDs, in three namespaces:
//   - `kuberay`: KubeRay's real operator (no webhook, as its default install);
//   - `raykeeper`: our controller with our validating webhook turned off (only the mutating one registered, as
//     `raykeeper dev --no-validating-webhook`);
//   - `webhook`: both of our webhooks.
// With the webhook off, our controller does exactly what KubeRay's does: the RayJob is stored and ends
// `jobDeploymentStatus: ValidationFailed`, reason `ValidationFailed`, with KubeRay's message word for word,
// and the same Warning event. With the webhook on, `kubectl apply` is refused (403) with that same message:
// the refusal moves earlier, its words do not change. A RayJob without entrypoint is admitted and run by
// both (no entrypoint rule: KubeRay has none): never ready here (no kubelet), both fail it on its
// preRunningDeadlineSeconds with reason PreRunningDeadlineExceeded.
import t from 'tap';
import { startController } from '../../controller/main.ts';
import { rayJobModule } from '../../controller/rayjob/module.ts';
import { applyObject } from '../../localcluster/apply.ts';
import { localWebhookConfigurations } from '../../localcluster/webhook-config.ts';
import type { KubeClient } from '../../kube/client.ts';
import { EVENTS, NAMESPACES } from '../../kube/resources.ts';
import { RAYJOBS, type RayJob } from '../../src/types.ts';
import { until } from '../helpers/until.ts';
import { missingPart } from '../helpers/parts.ts';
import { refusal, startLoopbackWebhook, untilValidatingCalled } from '../helpers/webhook.ts';
import { capturingLogger, kubeRayControlPlane, missingKubeRay, startKubeRay } from '../kuberay/helpers.ts';

const missing = missingKubeRay();
if (missing) t.fail(missingPart(missing));

const head = { rayStartParams: {}, template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.53.0' }] } } };
const clusterSpec = { rayVersion: '2.53.0', headGroupSpec: head };

/** The two invalid RayJobs of KubeRay's TestRayJob, as it applies them. */
const INVALID: Array<{ name: string; spec: Record<string, unknown>; eventReason: string }> = [
  {
    name: 'invalid-yamlstr',
    spec: { entrypoint: 'python /home/ray/jobs/counter.py', runtimeEnvYAML: 'invalid_yaml_string', rayClusterSpec: clusterSpec },
    eventReason: 'InvalidRayJobSpec',
  },
  {
    name: 'a'.repeat(48),
    spec: { entrypoint: 'python /home/ray/jobs/counter.py', rayClusterSpec: clusterSpec },
    eventReason: 'InvalidRayJobMetadata',
  },
];

/** KubeRay's "RayJob PreRunningDeadlineSeconds expires during Initializing state": no entrypoint. */
const NO_ENTRYPOINT = {
  name: 'ttl-initializing',
  spec: { rayClusterSpec: clusterSpec, shutdownAfterJobFinishes: true, preRunningDeadlineSeconds: 5 },
};

const rayJob = (name: string, spec: Record<string, unknown>): RayJob =>
  ({ apiVersion: 'ray.io/v1', kind: 'RayJob', metadata: { name }, spec }) as RayJob;

async function warnings(kube: KubeClient, namespace: string, name: string): Promise<Array<{ reason: string; message: string }>> {
  const list = await kube.list({
    ...EVENTS,
    namespace,
  });
  return list.items
    .filter((e) => e.type === 'Warning' && e.involvedObject.kind === 'RayJob' && e.involvedObject.name === name)
    .map((e) => ({ reason: e.reason!, message: e.message! }));
}

if (!missing)
  t.test(
    'TestRayJob ValidationFailed cases: KubeRay, raykeeper with the webhook off, raykeeper with it on',
    { timeout: 180_000 },
    async (t) => {
      const { cp, kube } = await kubeRayControlPlane((m) => t.comment(`control plane: ${m}`));
      t.teardown(async () => {
        kube.close();
        await cp.stop();
      });
      for (const name of ['kuberay', 'raykeeper', 'webhook', 'kuberay-lease']) await kube.create(NAMESPACES, { metadata: { name } });
      const kuberay = await startKubeRay(cp, { cleanup: false, leaseNamespace: 'kuberay-lease', args: ['--watch-namespace=kuberay'] });
      t.teardown(() => kuberay.stop());
      const ours = await startController({
        kubeConfig: cp.kubeConfig(),
        watchNamespace: 'raykeeper',
        modules: [rayJobModule],
        moduleFlags: { 'rayjob-dashboard-url-template': 'http://127.0.0.1:1' },
        env: {},
        logger: capturingLogger('warn').logger,
      });
      t.teardown(() => ours.stop().catch(() => undefined));

      // Our webhook: mutating + validating for `webhook`; the mutating one alone for `raykeeper` (validating off).
      const webhook = await startLoopbackWebhook(t);
      const register = async (namespace: string, validating: boolean) => {
        const configs = await localWebhookConfigurations({
          ...webhook,
          name: `raykeeper-${namespace}`,
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
          validating,
        });
        t.same(
          configs.map((c) => c.kind),
          validating ? ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'] : ['MutatingWebhookConfiguration'],
          `${namespace}: validating webhook ${validating ? 'on' : 'off'}`,
        );
        for (const config of configs) await applyObject(kube, config);
      };
      await register('webhook', true);
      await register('raykeeper', false);
      await untilValidatingCalled(kube, 'webhook');
      await until(
        () => kuberay.log().includes('"logger":"controllers.RayJob","msg":"Starting workers"'),
        "KubeRay's RayJob controller",
        60_000,
        200,
      );

      for (const ns of ['kuberay', 'raykeeper']) {
        for (const c of [...INVALID, NO_ENTRYPOINT]) await kube.create({ ...RAYJOBS, namespace: ns }, rayJob(c.name, c.spec));
      }
      const status = async (ns: string, name: string) => (await kube.get({ ...RAYJOBS, namespace: ns, name })).status ?? {};

      for (const c of INVALID) {
        const label = c.name.length > 20 ? `${c.name.length}-character name` : c.name;
        const done = async (ns: string) => (await status(ns, c.name)).jobDeploymentStatus === 'ValidationFailed';
        await until(async () => (await done('kuberay')) && (await done('raykeeper')), `${label}: ValidationFailed under both`, 30_000, 200);
        const theirs = await status('kuberay', c.name);
        const mine = await status('raykeeper', c.name);
        t.equal(theirs.reason, 'ValidationFailed', `${label}: KubeRay's reason`);
        t.ok((theirs.message ?? '') !== '', `${label}: KubeRay's message: ${theirs.message}`);
        t.same(
          { jobDeploymentStatus: mine.jobDeploymentStatus, reason: mine.reason, message: mine.message },
          { jobDeploymentStatus: 'ValidationFailed', reason: 'ValidationFailed', message: theirs.message },
          `${label}, webhook off: stored, ValidationFailed with KubeRay's reason and message`,
        );
        const kuberayEvents = await until(async () => {
          const found = (await warnings(kube, 'kuberay', c.name)).filter((e) => e.reason === c.eventReason);
          return found.length > 0 ? found : undefined;
        }, `${label}: KubeRay's Warning`);
        const ourEvents = await until(async () => {
          const found = (await warnings(kube, 'raykeeper', c.name)).filter((e) => e.reason === c.eventReason);
          return found.length > 0 ? found : undefined;
        }, `${label}: our Warning`);
        t.same(
          ourEvents.map((e) => e.message.replace('raykeeper/', '<ns>/')),
          kuberayEvents.slice(0, 1).map((e) => e.message.replace('kuberay/', '<ns>/')),
          `${label}: the same Warning ${c.eventReason}`,
        );

        const denied = await refusal(kube.create({ ...RAYJOBS, namespace: 'webhook' }, rayJob(c.name, c.spec)));
        t.equal(denied.statusCode, 403, `${label}, webhook on: refused at apply`);
        t.equal(
          denied.status?.message,
          `admission webhook "rayjob.validate.raykeeper.io" denied the request: ${theirs.message}`,
          `${label}, webhook on: KubeRay's message`,
        );
      }

      // No entrypoint: admitted by our webhook, run by both until the pre-running deadline.
      const admitted = await kube.create({ ...RAYJOBS, namespace: 'webhook' }, rayJob(NO_ENTRYPOINT.name, NO_ENTRYPOINT.spec));
      t.ok(admitted.metadata.uid, 'webhook on: a RayJob without entrypoint is admitted');
      const failed = async (ns: string) => (await status(ns, NO_ENTRYPOINT.name)).jobDeploymentStatus === 'Failed';
      await until(async () => (await failed('kuberay')) && (await failed('raykeeper')), 'no entrypoint: Failed under both', 45_000, 200);
      for (const ns of ['kuberay', 'raykeeper']) {
        const s = await status(ns, NO_ENTRYPOINT.name);
        t.same(
          { state: s.jobDeploymentStatus, reason: s.reason, cluster: s.rayClusterName !== undefined && s.rayClusterName !== '' },
          { state: 'Failed', reason: 'PreRunningDeadlineExceeded', cluster: true },
          `${ns}: no entrypoint is no validation failure; its RayCluster made, Failed at preRunningDeadlineSeconds`,
        );
      }
    },
  );
