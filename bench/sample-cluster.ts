// The RayCluster spec both benchmarks send: as users write them (external Redis, head + one worker group).
export function benchClusterSpec(env: Array<Record<string, unknown>>): Record<string, unknown> {
  const container = (name: string) => ({
    name,
    image: 'rayproject/ray:2.41.0',
    resources: { limits: { cpu: '2', memory: '8Gi' }, requests: { cpu: '2', memory: '8Gi' } },
    ports: [
      { containerPort: 6379, name: 'gcs' },
      { containerPort: 8265, name: 'dashboard' },
      { containerPort: 10001, name: 'client' },
    ],
    env,
    volumeMounts: [{ mountPath: '/tmp/ray', name: 'ray-logs' }],
  });
  return {
    rayVersion: '2.41.0',
    headGroupSpec: {
      rayStartParams: { 'num-cpus': '0', 'dashboard-host': '0.0.0.0' },
      template: { spec: { containers: [container('ray-head')], volumes: [{ name: 'ray-logs', emptyDir: {} }] } },
    },
    workerGroupSpecs: [
      {
        groupName: 'small-group',
        replicas: 2,
        minReplicas: 1,
        maxReplicas: 10,
        rayStartParams: {},
        template: { spec: { containers: [container('ray-worker')], volumes: [{ name: 'ray-logs', emptyDir: {} }] } },
      },
    ],
  };
}
