// The type follows the resource (kube/resources.ts's contract). The type half is checked by `tsc -p
// tsconfig.json` (npm test runs it first): each `@ts-expect-error` fails the build once its line compiles,
// i.e. once a caller could choose the type again. The run-time half: the references name the REST paths.
import t from 'tap';
import { type KubeClient, type ListResult, type ResourceRef, resourcePath } from '../../kube/client.ts';
import type { Informer, InformerFactory } from '../../kube/informer.ts';
import type { Event, Pod, ServiceAccount } from '../../kube/model.ts';
import { CUSTOM_RESOURCE_DEFINITIONS, EVENTS, PODS, SERVICEACCOUNTS } from '../../kube/resources.ts';
import { FT_RAYCLUSTER } from '../../controller/raycluster/informers.ts';
import { RAYCLUSTERS, RAYJOBS, type RayClusterFtView, type RayJob } from '../../src/types.ts';

/** true only when A and B are the same type (not merely assignable: `any` and a supertype fail). */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

// Never called: only compiled.
export async function typesOnly(kube: KubeClient, informers: InformerFactory): Promise<void> {
  const job = await kube.get(RAYJOBS.at('ns', 'x'));
  const jobIsRayJob: Same<typeof job, RayJob> = true;
  const status = await kube.patch({ ...RAYJOBS.at('ns', 'x'), subresource: 'status' }, {});
  const statusIsRayJob: Same<typeof status, RayJob> = true;
  const events = await kube.list(EVENTS.at('ns'));
  const eventsAreEvents: Same<typeof events, ListResult<Event>> = true;
  const maybe = await kube.getOrUndefined({ ...SERVICEACCOUNTS, namespace: 'ns', name: 'sa' });
  const maybeServiceAccount: Same<typeof maybe, ServiceAccount | undefined> = true;
  const handWritten = await kube.get({ version: 'v1', plural: 'pods', namespace: 'ns', name: 'p' });
  const handWrittenIsUnknown: Same<typeof handWritten, unknown> = true;
  const pods = informers.get({ ...PODS, labelSelector: 'a=b' });
  const podsArePods: Same<typeof pods, Informer<Pod>> = true;
  const ft = informers.get(RAYCLUSTERS, FT_RAYCLUSTER);
  const ftIsTheProjection: Same<typeof ft, Informer<RayClusterFtView>> = true;
  await kube.watch(
    PODS.at('ns'),
    {},
    (_type, pod) => {
      const watchedIsPod: Same<typeof pod, Pod> = true;
      void watchedIsPod;
    },
    () => {},
  );
  void [jobIsRayJob, statusIsRayJob, eventsAreEvents, maybeServiceAccount, handWrittenIsUnknown, podsArePods, ftIsTheProjection];

  // @ts-expect-error the caller cannot choose the type: a view of the kind
  await kube.get<{ status?: unknown }>(RAYJOBS.at('ns', 'x'));
  // @ts-expect-error nor the kind itself (the reference says it)
  await kube.list<Event>(EVENTS.at('ns'));
  // @ts-expect-error nor a type for a reference written by hand
  await kube.create<Pod>({ version: 'v1', plural: 'pods', namespace: 'ns' }, {});
  // @ts-expect-error a watch's objects are the resource's
  await kube.watch<{ metadata: { name: string } }>(
    PODS.at('ns'),
    {},
    () => {},
    () => {},
  );
  // @ts-expect-error an informer's objects are the resource's
  informers.get<Pod>(RAYJOBS);
  // @ts-expect-error a projection of another resource's objects does not fit
  informers.get(PODS, FT_RAYCLUSTER);
}

const rows: Array<[ref: ResourceRef, path: string]> = [
  [RAYJOBS.at('ns', 'x'), '/apis/ray.io/v1/namespaces/ns/rayjobs/x'],
  [{ ...RAYJOBS.at('ns', 'x'), subresource: 'status' }, '/apis/ray.io/v1/namespaces/ns/rayjobs/x/status'],
  [EVENTS.at('ns'), '/api/v1/namespaces/ns/events'],
  [PODS.at(undefined), '/api/v1/pods'],
  [CUSTOM_RESOURCE_DEFINITIONS.at(undefined, 'rayjobs.ray.io'), '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/rayjobs.ray.io'],
  [{ ...SERVICEACCOUNTS.at('ns', 'sa'), subresource: 'token' }, '/api/v1/namespaces/ns/serviceaccounts/sa/token'],
];

for (const [ref, path] of rows) t.equal(resourcePath(ref), path, path);
