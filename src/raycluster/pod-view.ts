// What is read of a Ray pod that exists (the operator's plan and status, the RayJob controller's
// SidecarMode, the GCS-FT cleanup): the view the shared pod cache keeps (controller/raycluster/informers.ts
// slimPod): metadata, the node, the restart policy, the containers' names, and the status. A Pod is one; a
// cached pod is only this, so code reading any other part of a pod it did not build does not compile.
import type { ApiObject, Container, PodStatus } from '../../kube/model.ts';

export interface RayPodView extends ApiObject {
  spec?: { restartPolicy?: string | undefined; nodeName?: string | undefined; containers: Array<Pick<Container, 'name'>> };
  status?: PodStatus | undefined;
}
