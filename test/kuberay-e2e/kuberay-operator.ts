// `npm run test:kuberay -- --operator kuberay`: KubeRay's own operator runs the Ray pods and the RayJobs
// on the node instead of raykeeper's, so "is this failure a raykeeper difference?" is answered by KubeRay
// itself. On the node `raykeeper dev --kubelet` made:
//   1. KubeRay v1.6.2's CRDs over ours (RayService included, which its operator watches);
//   2. raykeeper's controller and webhook switched to companion mode (`--companion=on`, as
//      manifests/companion does): raykeeper keeps the webhook and the GCS-FT cleanup and runs no pods;
//   3. ray-operator (tools/build-kuberay.sh) on this machine with its own Redis cleanup off (our guide's
//      setting beside KubeRay), resolving Service names with the node's cluster DNS as a pod would.
import { applyCrds } from '../../localcluster/apply.ts';
import { NODE_NETWORK } from '../../localcluster/node/config.ts';
import type { KubeClient } from '../../kube/client.ts';
import { JSON_PATCH } from '../../kube/client.ts';
import { DEPLOYMENTS } from '../../kube/resources.ts';
import { SYSTEM_NAMESPACE, waitForDeployment } from '../../dev/kubelet.ts';
import { kubeRayCrds, startKubeRay, type KubeRayOperator } from '../kuberay/helpers.ts';

const COMPANION_FLAG = '--companion=on';
const RAYKEEPER_DEPLOYMENTS = ['raykeeper-controller', 'raykeeper-webhook'];

export async function handOverToKubeRay(
  kube: KubeClient,
  kubeconfigPath: string,
  progress: (line: string) => void,
): Promise<KubeRayOperator> {
  progress("test:kuberay: --operator kuberay: KubeRay's CRDs, raykeeper in companion mode, ray-operator v1.6.2");
  await applyCrds(kube, kubeRayCrds());
  for (const name of RAYKEEPER_DEPLOYMENTS) {
    const d = await kube.get({ ...DEPLOYMENTS, namespace: SYSTEM_NAMESPACE, name });
    if (d.spec?.template?.spec?.containers?.[0]?.args?.includes(COMPANION_FLAG)) continue;
    await kube.patch(
      { ...DEPLOYMENTS, namespace: SYSTEM_NAMESPACE, name },
      [{ op: 'add', path: '/spec/template/spec/containers/0/args/-', value: COMPANION_FLAG }],
      JSON_PATCH,
    );
  }
  for (const name of RAYKEEPER_DEPLOYMENTS) await waitForDeployment(kube, SYSTEM_NAMESPACE, name);
  return startKubeRay({ info: { kubeconfigPath } }, { cleanup: false, leaseNamespace: SYSTEM_NAMESPACE, nameserver: NODE_NETWORK.gateway });
}
