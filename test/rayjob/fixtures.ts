// Shared builders for the RayJob tests: RayJobs in a given state, clusters, submitter Jobs.
import type { RayCluster, RayJob, RayJobSpec, RayJobStatus } from '../../src/types.ts';
import type { BatchJob } from '../../kube/model.ts';

export const T0 = Date.parse('2026-01-01T00:00:00Z');
export const at = (seconds: number): number => T0 + seconds * 1000;
export const iso = (seconds: number): string => new Date(at(seconds)).toISOString().replace('.000Z', 'Z');

export const HEAD_IMAGE = 'rayproject/ray:2.40.0';

export function clusterSpec(): NonNullable<RayJobSpec['rayClusterSpec']> {
  return {
    headGroupSpec: {
      rayStartParams: {},
      template: { spec: { containers: [{ name: 'ray-head', image: HEAD_IMAGE }] } },
    },
    workerGroupSpecs: [{ groupName: 'small', template: { spec: { containers: [{ name: 'ray-worker', image: HEAD_IMAGE }] } } }],
  };
}

export interface JobOptions {
  spec?: Partial<RayJobSpec> & Record<string, unknown>;
  status?: Partial<RayJobStatus>;
  metadata?: Partial<RayJob['metadata']>;
}

/** A RayJob whose stored deployment status is `state` (undefined = no status at all). */
export function rayJob(state: string | undefined, options: JobOptions = {}): RayJob {
  const started = state !== undefined && state !== '' && state !== 'New';
  const status: RayJobStatus | undefined =
    state === undefined
      ? undefined
      : {
          jobDeploymentStatus: state,
          ...(started ? { jobId: 'demo-abcde', rayClusterName: 'demo-fghjk', startTime: iso(0), jobStatus: '' } : {}),
          ...options.status,
        };
  const job: RayJob = {
    apiVersion: 'ray.io/v1',
    kind: 'RayJob',
    metadata: {
      name: 'demo',
      namespace: 'ns1',
      uid: 'uid-demo',
      resourceVersion: '7',
      finalizers: started ? ['ray.io/rayjob-finalizer'] : [],
      ...options.metadata,
    },
    spec: {
      entrypoint: 'python main.py',
      shutdownAfterJobFinishes: true,
      rayClusterSpec: clusterSpec(),
      ...options.spec,
    },
  };
  if (status !== undefined) job.status = status;
  return job;
}

export function cluster(state: string | undefined, options: { deleting?: boolean; name?: string } = {}): RayCluster {
  const c: RayCluster = {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: { name: options.name ?? 'demo-fghjk', namespace: 'ns1', uid: 'uid-cluster' },
    spec: clusterSpec(),
  };
  if (state !== undefined) c.status = { state, lastUpdateTime: iso(1) };
  if (options.deleting) c.metadata.deletionTimestamp = iso(1);
  return c;
}

export function submitter(kind: 'running' | 'complete' | 'failed', atSeconds = 10, options: { deleting?: boolean } = {}): BatchJob {
  const job: BatchJob = { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'demo', namespace: 'ns1' }, status: {} };
  if (kind === 'complete') job.status = { conditions: [{ type: 'Complete', status: 'True', lastTransitionTime: iso(atSeconds) }] };
  if (kind === 'failed') {
    job.status = {
      conditions: [
        {
          type: 'Failed',
          status: 'True',
          reason: 'BackoffLimitExceeded',
          message: 'Job has reached the specified backoff limit',
          lastTransitionTime: iso(atSeconds),
        },
      ],
    };
  }
  if (options.deleting) job.metadata.deletionTimestamp = iso(atSeconds);
  return job;
}

export function info(status: string, options: { end?: number; message?: string } = {}) {
  return {
    kind: 'found' as const,
    info: {
      job_id: '02000000',
      submission_id: 'demo-abcde',
      status,
      message: options.message ?? `Job ${status.toLowerCase()}`,
      start_time: at(5),
      end_time: options.end === undefined ? null : at(options.end),
    },
  };
}
