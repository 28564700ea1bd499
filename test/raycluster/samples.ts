// KubeRay's sample RayClusters the operator tests and the oracle comparison use.
import type { RayCluster } from '../../src/types.ts';

/** KubeRay's config/samples/ray-cluster.sample.yaml (v1.6.2). */
export function kuberaySample(): RayCluster {
  return {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: { name: 'raycluster-kuberay' },
    spec: {
      rayVersion: '2.52.0',
      headGroupSpec: {
        rayStartParams: {},
        template: {
          spec: {
            containers: [
              {
                name: 'ray-head',
                image: 'rayproject/ray:2.52.0',
                resources: { limits: { cpu: '1', memory: '5Gi' }, requests: { cpu: '1', memory: '5Gi' } },
                ports: [
                  { containerPort: 6379, name: 'gcs-server' },
                  { containerPort: 8265, name: 'dashboard' },
                  { containerPort: 10001, name: 'client' },
                ],
              },
            ],
          },
        },
      },
      workerGroupSpecs: [
        {
          replicas: 1,
          minReplicas: 1,
          maxReplicas: 5,
          groupName: 'workergroup',
          rayStartParams: {},
          template: {
            spec: {
              containers: [
                {
                  name: 'ray-worker',
                  image: 'rayproject/ray:2.52.0',
                  resources: { limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '1', memory: '1Gi' } },
                },
              ],
            },
          },
        },
      ],
    },
  } as RayCluster;
}
