// The RayCronJob CRD: jobTemplate is the RayJob CRD's spec schema (no drift between the two), and the real
// API server refuses what the schema refuses (our CronJob fields, KubeRay's deletionStrategy rules in the
// template) and keeps unknown fields of the template.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { type KubeApiError, MERGE_PATCH } from '../../kube/client.ts';
import { RAYCRONJOBS } from '../../src/types.ts';
import { testNamespace } from '../helpers/control-plane.ts';

const schemaOf = (file: string) =>
  parse(readFileSync(join(REPO_ROOT, 'manifests', 'crds', file), 'utf8')).spec.versions[0].schema.openAPIV3Schema;

t.test("jobTemplate's schema is the RayJob CRD's spec schema", async (t) => {
  const cron = schemaOf('ray.io_raycronjobs.yaml');
  t.same(cron.properties.spec.properties.jobTemplate, schemaOf('ray.io_rayjobs.yaml').properties.spec);
  t.same(cron.properties.spec.required, ['jobTemplate', 'schedule'], "KubeRay's required fields");
  t.same(cron.properties.status.properties, {
    lastScheduleTime: { type: 'string', format: 'date-time', description: 'The scheduled time of the last RayJob created.' },
  });
});

t.test('the real API server: our fields are checked, the template keeps what it does not know', async (t) => {
  const { kube, name: ns } = await testNamespace(t);
  const template = { entrypoint: 'python x.py', rayClusterSpec: { headGroupSpec: { rayStartParams: {} } }, futureField: 'kept' };
  const make = (name: string, spec: Record<string, unknown>) =>
    kube.create({ ...RAYCRONJOBS, namespace: ns }, { apiVersion: 'ray.io/v1', kind: 'RayCronJob', metadata: { name }, spec });
  const refused = async (name: string, spec: Record<string, unknown>, want: RegExp) => {
    const err = (await make(name, spec).then(
      () => undefined,
      (e: KubeApiError) => e,
    )) as KubeApiError | undefined;
    t.equal(err?.statusCode, 422, `${name} refused`);
    t.match(err?.message, want, name);
  };
  const ok = await make('ok', {
    schedule: '*/5 * * * *',
    timeZone: 'Europe/Berlin',
    jobTemplate: template,
    suspend: false,
    concurrencyPolicy: 'Forbid',
    startingDeadlineSeconds: 30,
    successfulJobsHistoryLimit: 0,
    failedJobsHistoryLimit: 2,
  });
  t.equal(ok.spec?.jobTemplate?.futureField, 'kept', 'unknown template fields are kept');
  t.equal(ok.status, undefined);
  await refused('no-schedule', { jobTemplate: template }, /spec.schedule: Required value/);
  await refused('no-template', { schedule: '@hourly' }, /spec.jobTemplate: Required value/);
  await refused(
    'policy',
    { schedule: '@hourly', jobTemplate: template, concurrencyPolicy: 'Sometimes' },
    /spec.concurrencyPolicy: Unsupported value/,
  );
  for (const field of ['startingDeadlineSeconds', 'successfulJobsHistoryLimit', 'failedJobsHistoryLimit']) {
    await refused(
      field.toLowerCase(),
      { schedule: '@hourly', jobTemplate: template, [field]: -1 },
      new RegExp(`spec.${field}: Invalid value`),
    );
  }
  await refused(
    'rules-and-legacy',
    {
      schedule: '@hourly',
      jobTemplate: {
        ...template,
        deletionStrategy: {
          onSuccess: { policy: 'DeleteCluster' },
          deletionRules: [{ policy: 'DeleteCluster', condition: { jobStatus: 'FAILED' } }],
        },
      },
    },
    /legacy policies \(onSuccess\/onFailure\) and deletionRules cannot be used together/,
  );
  const status = await kube.patch(
    { ...RAYCRONJOBS, namespace: ns, name: 'ok', subresource: 'status' },
    { status: { lastScheduleTime: '2026-12-04T10:10:00Z' } },
    MERGE_PATCH,
  );
  t.equal(status.status?.lastScheduleTime, '2026-12-04T10:10:00Z', 'status through /status');
  const bad = await kube
    .patch({ ...RAYCRONJOBS, namespace: ns, name: 'ok', subresource: 'status' }, { status: { lastScheduleTime: 'yesterday' } }, MERGE_PATCH)
    .then(
      () => 200,
      (e: KubeApiError) => e.statusCode,
    );
  t.equal(bad, 422, 'lastScheduleTime is a date-time');
});
