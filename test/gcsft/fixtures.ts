// Builders for RayCluster / Pod / Job objects used by the GCS-FT cleanup tests (and the uninstall decision).
import { GCS_FT_REDIS_CLEANUP_FINALIZER } from '../../src/names.ts';
import type { RayCluster } from '../../src/types.ts';
import type { BatchJob } from '../../kube/model.ts';
import type { PodLite } from '../../src/gcsft/decide.ts';

export const T0 = Date.parse('2026-11-30T10:00:00Z');

export interface ClusterOpts {
  name?: string;
  uid?: string;
  ft?: 'annotation' | 'options' | 'off' | 'rocksdb';
  finalizers?: string[] | undefined;
  deletedAt?: number | undefined;
  annotations?: Record<string, string>;
  env?: Array<{ name: string; value?: string; valueFrom?: unknown }>;
  options?: Record<string, unknown>;
}

export function cluster(o: ClusterOpts = {}): RayCluster {
  const annotations: Record<string, string> = { ...(o.annotations ?? {}) };
  const ft = o.ft ?? 'annotation';
  if (ft === 'annotation') annotations['ray.io/ft-enabled'] = 'true';
  const env = o.env ?? (ft === 'annotation' ? [{ name: 'RAY_REDIS_ADDRESS', value: 'redis:6379' }] : []);
  const spec: Record<string, unknown> = {
    headGroupSpec: {
      rayStartParams: {},
      template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.40.0', env }] } },
    },
    workerGroupSpecs: [],
  };
  if (ft === 'options') spec.gcsFaultToleranceOptions = { redisAddress: 'redis:6379', ...(o.options ?? {}) };
  if (ft === 'rocksdb') spec.gcsFaultToleranceOptions = { backend: 'rocksdb' };
  const metadata: RayCluster['metadata'] = {
    name: o.name ?? 'demo',
    namespace: 'team-a',
    uid: o.uid ?? '0b7c1a52-5f7e-4b8e-9a43-2d1f0c2e9f10',
    resourceVersion: '42',
    annotations,
  };
  if (o.finalizers !== undefined) metadata.finalizers = o.finalizers;
  if (o.deletedAt !== undefined) metadata.deletionTimestamp = new Date(o.deletedAt).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return { apiVersion: 'ray.io/v1', kind: 'RayCluster', metadata, spec: spec as RayCluster['spec'] };
}

export const withFinalizer = [GCS_FT_REDIS_CLEANUP_FINALIZER];

export function pod(name: string, type: 'head' | 'worker' | 'redis-cleanup', deleting = false): PodLite {
  return {
    metadata: {
      name,
      labels: { 'ray.io/cluster': 'demo', 'ray.io/node-type': type },
      ...(deleting ? { deletionTimestamp: new Date(T0).toISOString() } : {}),
    },
  };
}

export function job(
  opts: {
    ownerUid?: string;
    condition?: 'Complete' | 'Failed' | 'FailureTarget' | 'SuccessCriteriaMet';
    reason?: string;
    message?: string;
    deleting?: boolean;
  } = {},
): BatchJob {
  const j: BatchJob = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: 'demo-redis-cleanup',
      namespace: 'team-a',
      uid: 'job-uid-1',
      ownerReferences: [
        {
          apiVersion: 'ray.io/v1',
          kind: 'RayCluster',
          name: 'demo',
          uid: opts.ownerUid ?? '0b7c1a52-5f7e-4b8e-9a43-2d1f0c2e9f10',
          controller: true,
        },
      ],
    },
    spec: {},
    status: {},
  };
  if (opts.deleting) j.metadata.deletionTimestamp = new Date(T0).toISOString();
  if (opts.condition) {
    j.status = {
      conditions: [{ type: opts.condition, status: 'True', reason: opts.reason ?? opts.condition, message: opts.message ?? '' }],
    };
  }
  return j;
}
