// RayCronJob defaulting: CronJob's concurrencyPolicy and history limits (fields KubeRay does not have), on
// CREATE only, through the same mutate() the HTTPS handler and `raykeeper mutate` call.
import t from 'tap';
import { defaultRayCronJob } from '../../src/admission/raycronjob.ts';
import { mutate } from '../../src/admission/mutate.ts';
import { cloneJson } from '../../src/admission/json.ts';
import type { JsonObject } from '../../kube/model.ts';
import { counterNamespaces, review } from './fixtures.ts';
import { mutateDocument, readDocuments } from '../../webhook/offline.ts';

function cronJob(spec: JsonObject | null = { schedule: '*/5 * * * *', jobTemplate: { entrypoint: 'x' } }): JsonObject {
  const job: JsonObject = { apiVersion: 'ray.io/v1', kind: 'RayCronJob', metadata: { name: 'nightly', namespace: 'ray' } };
  job.spec = spec;
  return job;
}

function create(job: JsonObject, operation: 'CREATE' | 'UPDATE' = 'CREATE'): JsonObject {
  const copy = cloneJson(job);
  defaultRayCronJob(copy, { operation });
  return copy;
}

t.test('concurrencyPolicy Allow and history limits 3 / 1, only when absent or null', async (t) => {
  t.same(create(cronJob()).spec, {
    schedule: '*/5 * * * *',
    jobTemplate: { entrypoint: 'x' },
    concurrencyPolicy: 'Allow',
    successfulJobsHistoryLimit: 3,
    failedJobsHistoryLimit: 1,
  });
  const set = {
    schedule: '@hourly',
    jobTemplate: {},
    concurrencyPolicy: 'Forbid',
    successfulJobsHistoryLimit: 0,
    failedJobsHistoryLimit: 5,
  };
  t.same(create(cronJob(set)).spec, set, 'user values kept, 0 included');
  t.same(
    create(cronJob({ schedule: '@hourly', concurrencyPolicy: null, failedJobsHistoryLimit: null })).spec,
    { schedule: '@hourly', concurrencyPolicy: 'Allow', failedJobsHistoryLimit: 1, successfulJobsHistoryLimit: 3 },
    'null defaulted',
  );
  const noSpec = cronJob();
  delete noSpec.spec;
  t.notOk('spec' in create(noSpec), 'no spec is not invented');
  t.equal(create(cronJob(null)).spec, null, 'a null spec is not invented either');
  t.same(create(cronJob({ schedule: '@hourly' }), 'UPDATE').spec, { schedule: '@hourly' }, 'UPDATE: nothing');
});

t.test('mutate(): the patch the API server applies; wrong kinds and shapes refused', async (t) => {
  const options = { newStorageNamespace: counterNamespaces(), finalizerEnabled: true };
  const outcome = mutate(review('RayCronJob', 'CREATE', cronJob()), 'RayCronJob', options);
  t.equal(outcome.httpStatus, 200);
  t.same(outcome.patch, [
    { op: 'add', path: '/spec/concurrencyPolicy', value: 'Allow' },
    { op: 'add', path: '/spec/successfulJobsHistoryLimit', value: 3 },
    { op: 'add', path: '/spec/failedJobsHistoryLimit', value: 1 },
  ]);
  t.match(outcome.answer, { response: { allowed: true, patchType: 'JSONPatch' } });
  const wrongKind = mutate(review('RayJob', 'CREATE', cronJob()), 'RayCronJob', options);
  t.equal(wrongKind.httpStatus, 400);
  t.match(wrongKind.error, 'this endpoint mutates ray.io/v1 RayCronJob, got ray.io/v1 RayJob');
  const badSpec = mutate(review('RayCronJob', 'CREATE', { ...cronJob(), spec: 'nope' }), 'RayCronJob', options);
  t.equal(badSpec.httpStatus, 400);
  t.match(badSpec.error, 'object.spec must be an object');
  const del = mutate(review('RayCronJob', 'DELETE', undefined, cronJob()), 'RayCronJob', options);
  t.same(del.patch, [], 'DELETE is never patched');
});

t.test('`raykeeper mutate` handles RayCronJobs in manifests', async (t) => {
  const yaml =
    'apiVersion: ray.io/v1\nkind: RayCronJob\nmetadata: {name: nightly}\nspec: {schedule: "@daily", jobTemplate: {entrypoint: x}}\n';
  const [doc] = readDocuments('cron.yaml', yaml);
  if (doc === undefined || !('value' in doc)) throw new Error('the manifest did not parse');
  const result = mutateDocument(doc, doc.value, { newStorageNamespace: counterNamespaces(), finalizerEnabled: true });
  t.match(result, {
    kind: 'object',
    label: 'RayCronJob nightly',
    stored: { spec: { concurrencyPolicy: 'Allow', successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 1 } },
  });
});
