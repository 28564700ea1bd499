// RayJob defaulting: deployment status New and KubeRay's CRD spec defaults, on CREATE only.
import t from 'tap';
import { defaultRayJob } from '../../src/admission/rayjob.ts';
import { cloneJson } from '../../src/admission/json.ts';
import type { JsonObject } from '../../kube/model.ts';
import { rayJob } from './fixtures.ts';

function create(job: JsonObject, operation: 'CREATE' | 'UPDATE' = 'CREATE'): JsonObject {
  const copy = cloneJson(job);
  defaultRayJob(copy, { operation });
  return copy;
}

t.test('status.jobDeploymentStatus defaults to New on CREATE', async (t) => {
  const rows: Array<[string, JsonObject | null | undefined, JsonObject]> = [
    ['status absent', undefined, { jobDeploymentStatus: 'New' }],
    ['status null', null, { jobDeploymentStatus: 'New' }],
    ['status empty', {}, { jobDeploymentStatus: 'New' }],
    ['deployment status "" (KubeRay New)', { jobDeploymentStatus: '' }, { jobDeploymentStatus: 'New' }],
    ['deployment status null', { jobDeploymentStatus: null }, { jobDeploymentStatus: 'New' }],
    ['other status fields kept', { jobStatus: '', message: 'm' }, { jobStatus: '', message: 'm', jobDeploymentStatus: 'New' }],
    ['a set status is kept', { jobDeploymentStatus: 'Suspended' }, { jobDeploymentStatus: 'Suspended' }],
  ];
  for (const [name, status, expected] of rows) {
    t.same(create(rayJob(undefined, status)).status, expected, name);
  }
});

t.test('spec defaults are KubeRay CRD defaults, only when absent or null', async (t) => {
  t.same(create(rayJob({ entrypoint: 'x' })).spec, {
    entrypoint: 'x',
    submissionMode: 'K8sJobMode',
    backoffLimit: 0,
    ttlSecondsAfterFinished: 0,
  });
  t.same(
    create(rayJob({ entrypoint: 'x', submissionMode: 'HTTPMode', backoffLimit: 3, ttlSecondsAfterFinished: 60 })).spec,
    { entrypoint: 'x', submissionMode: 'HTTPMode', backoffLimit: 3, ttlSecondsAfterFinished: 60 },
    'user values kept',
  );
  t.same(
    create(rayJob({ submissionMode: null })).spec,
    { submissionMode: 'K8sJobMode', backoffLimit: 0, ttlSecondsAfterFinished: 0 },
    'null defaulted',
  );
  const noSpec = rayJob();
  delete noSpec.spec;
  t.notOk('spec' in create(noSpec), 'no spec is not invented');
  t.equal(create(rayJob(null)).spec, null, 'a null spec is not invented either');
});

t.test('UPDATE changes nothing; no finalizer is ever added', async (t) => {
  const job = rayJob({ entrypoint: 'x' });
  t.same(create(job, 'UPDATE'), job);
  const created = create(job) as { metadata: JsonObject };
  t.equal(created.metadata.finalizers, undefined);
});
