// KubeRay's metric samples from one object (src/kuberay-metrics.ts), as a table.
import t from 'tap';
import { rayClusterSamples, rayJobSamples } from '../../src/kuberay-metrics.ts';
import type { RayCluster, RayJob } from '../../src/types.ts';

const meta = { name: 'c', namespace: 'ns', uid: 'u-1', creationTimestamp: '2026-12-04T10:00:00Z' };

t.test('RayCluster: info with owner_kind, provisioned condition and its duration', async (t) => {
  const fresh: RayCluster = { metadata: { ...meta } };
  const s = rayClusterSamples(fresh);
  t.same(s.info, { labels: { name: 'c', namespace: 'ns', uid: 'u-1', owner_kind: 'None' }, value: 1 });
  t.same(s.conditionProvisioned.labels.condition, 'false');
  t.equal(s.provisionedDuration, undefined, 'no duration before Provisioned');

  const ofJob: RayCluster = {
    metadata: { ...meta, labels: { 'ray.io/originated-from-crd': 'RayJob' } },
    status: {
      conditions: [
        { type: 'HeadPodReady', status: 'True', lastTransitionTime: '2026-12-04T10:00:30Z' },
        { type: 'RayClusterProvisioned', status: 'True', lastTransitionTime: '2026-12-04T10:01:15Z' },
      ],
    },
  };
  const p = rayClusterSamples(ofJob);
  t.equal(p.info.labels.owner_kind, 'RayJob');
  t.equal(p.conditionProvisioned.labels.condition, 'true');
  t.same(p.provisionedDuration, { labels: { name: 'c', namespace: 'ns', uid: 'u-1' }, value: 75 });

  const notYet: RayCluster = {
    metadata: { ...meta },
    status: { conditions: [{ type: 'RayClusterProvisioned', status: 'False', lastTransitionTime: '2026-12-04T10:00:05Z' }] },
  };
  t.equal(rayClusterSamples(notYet).conditionProvisioned.labels.condition, 'false');
  t.equal(rayClusterSamples(notYet).provisionedDuration, undefined);
});

t.test('RayJob: info, deployment status, execution duration of a finished try', async (t) => {
  const job = (status: RayJob['status']): RayJob => ({ metadata: { ...meta, name: 'j' }, ...(status ? { status } : {}) });
  const rows: Array<[string, RayJob, string, { status: string; retry: string; seconds: number } | undefined]> = [
    ['no status yet', job(undefined), '', undefined],
    ['running', job({ jobDeploymentStatus: 'Running', startTime: '2026-12-04T10:00:00Z' }), 'Running', undefined],
    [
      'complete on the first try',
      job({ jobDeploymentStatus: 'Complete', startTime: '2026-12-04T10:00:00Z', endTime: '2026-12-04T10:02:00Z', succeeded: 1, failed: 0 }),
      'Complete',
      { status: 'Complete', retry: '0', seconds: 120 },
    ],
    [
      'complete after one failed try',
      job({ jobDeploymentStatus: 'Complete', startTime: '2026-12-04T10:05:00Z', endTime: '2026-12-04T10:05:30Z', failed: 1 }),
      'Complete',
      { status: 'Complete', retry: '1', seconds: 30 },
    ],
    [
      'failed for good on the third try (failed counts this one)',
      job({ jobDeploymentStatus: 'Failed', startTime: '2026-12-04T10:00:00Z', endTime: '2026-12-04T10:00:09Z', failed: 3 }),
      'Failed',
      { status: 'Failed', retry: '2', seconds: 9 },
    ],
    [
      'retrying: no end time, no sample',
      job({ jobDeploymentStatus: 'Retrying', startTime: '2026-12-04T10:00:00Z', failed: 1 }),
      'Retrying',
      undefined,
    ],
    ['finished without startTime', job({ jobDeploymentStatus: 'Failed', endTime: '2026-12-04T10:00:09Z' }), 'Failed', undefined],
  ];
  for (const [why, j, deployment, duration] of rows) {
    const s = rayJobSamples(j);
    t.same(s.info, { labels: { name: 'j', namespace: 'ns', uid: 'u-1' }, value: 1 }, `${why}: info`);
    t.equal(s.deploymentStatus.labels.deployment_status, deployment, `${why}: deployment_status`);
    if (duration === undefined) t.equal(s.executionDuration, undefined, `${why}: no duration`);
    else
      t.same(
        s.executionDuration,
        {
          labels: { name: 'j', namespace: 'ns', uid: 'u-1', job_deployment_status: duration.status, retry_count: duration.retry },
          value: duration.seconds,
        },
        `${why}: duration`,
      );
  }
});
