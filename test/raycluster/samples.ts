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

/** KubeRay's pod_test.go `instance` (testMemoryLimit = 1Gi). */
export function kuberayPodTestInstance(): RayCluster {
  return {
    metadata: { name: 'raycluster-sample', namespace: 'default', uid: 'uid-1' },
    spec: {
      headGroupSpec: {
        rayStartParams: {},
        template: {
          spec: {
            containers: [
              {
                name: 'ray-head',
                image: 'repo/image:custom',
                env: [{ name: 'TEST_ENV_NAME', value: 'TEST_ENV_VALUE' }],
                resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } },
              },
            ],
          },
        },
      },
      workerGroupSpecs: [
        {
          replicas: 3,
          minReplicas: 0,
          maxReplicas: 10000,
          groupName: 'small-group',
          rayStartParams: { port: '6379' },
          template: {
            spec: {
              containers: [
                {
                  name: 'ray-worker',
                  image: 'repo/image:custom',
                  resources: { limits: { cpu: '1', memory: '1Gi', 'nvidia.com/gpu': '3' } },
                  env: [{ name: 'TEST_ENV_NAME', value: 'TEST_ENV_VALUE' }],
                },
              ],
            },
          },
        },
      ],
    },
  } as RayCluster;
}
