// The webhook's RayCronJob defaults on CREATE through the real kube-apiserver: our webhook registered by our
// MutatingWebhookConfiguration (manifests/base, re-pointed at loopback), a RayCronJob created with kubectl's
// body, stored with concurrencyPolicy Allow and history limits 3 / 1; values the user set are kept; an
// UPDATE is left alone.
import t from 'tap';
import { MERGE_PATCH } from '../../kube/client.ts';
import { RAYCRONJOBS } from '../../src/types.ts';
import { registerWebhook } from '../helpers/webhook.ts';
import { env } from '../helpers/harness.ts';

const jobTemplate = { entrypoint: 'python -c "print(1)"', rayClusterSpec: { headGroupSpec: { rayStartParams: {} } } };

t.test('a RayCronJob created through the API server gets the defaults of our webhook', async (t) => {
  const e = await env(t);
  await registerWebhook(t, e);
  const ref = { ...RAYCRONJOBS, namespace: e.ns.name };
  const created = await e.kube.create(ref, {
    apiVersion: 'ray.io/v1',
    kind: 'RayCronJob',
    metadata: { name: 'defaults' },
    spec: { schedule: '@hourly', jobTemplate },
  });
  t.match(created.spec, { schedule: '@hourly', concurrencyPolicy: 'Allow', successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 1 });
  const stored = await e.kube.get({ ...ref, name: 'defaults' });
  t.same(
    [stored.spec?.concurrencyPolicy, stored.spec?.successfulJobsHistoryLimit, stored.spec?.failedJobsHistoryLimit],
    ['Allow', 3, 1],
    'stored so',
  );
  const own = await e.kube.create(ref, {
    apiVersion: 'ray.io/v1',
    kind: 'RayCronJob',
    metadata: { name: 'own' },
    spec: { schedule: '@hourly', jobTemplate, concurrencyPolicy: 'Replace', successfulJobsHistoryLimit: 0 },
  });
  t.match(own.spec, { concurrencyPolicy: 'Replace', successfulJobsHistoryLimit: 0, failedJobsHistoryLimit: 1 }, 'set values kept');
  const updated = await e.kube.patch(
    { ...ref, name: 'own' },
    { spec: { concurrencyPolicy: null, failedJobsHistoryLimit: null } },
    MERGE_PATCH,
  );
  t.equal(updated.spec?.concurrencyPolicy, undefined, 'UPDATE: not defaulted again (the controller reads absent as Allow)');
  t.equal(updated.spec?.failedJobsHistoryLimit, undefined);
});
