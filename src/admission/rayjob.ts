// RayJob defaulting on CREATE (in place on the copy, each write recorded as patch operations):
// - status.jobDeploymentStatus "New" when absent or "" (KubeRay encodes New as ""). API servers whose CRD
//   has the status subresource drop status on CREATE; the controller treats an absent status as New, so
//   this is defaulting for readers, not the source of truth.
// - spec.submissionMode K8sJobMode, spec.backoffLimit 0, spec.ttlSecondsAfterFinished 0 when absent or null:
//   the defaults KubeRay's CRD declares (+kubebuilder:default), for API servers whose CRD lacks them.
//   Only inside an existing spec object, as CRD defaulting does.
// UPDATE, DELETE, CONNECT: nothing. The RayJob finalizer is the controller's business, never the webhook's.
import type { JsonObject } from '../../kube/model.ts';
import { isJsonObject } from './json.ts';
import { metadataShapeProblem } from './metadata.ts';
import { setContainer, setMember } from './patch.ts';
import type { DefaultingResult } from './raycluster.ts';

export const RAYJOB_SPEC_DEFAULTS: ReadonlyArray<readonly [field: string, value: string | number]> = [
  ['submissionMode', 'K8sJobMode'],
  ['backoffLimit', 0],
  ['ttlSecondsAfterFinished', 0],
];

export interface RayJobDefaultingContext {
  operation: 'CREATE' | 'UPDATE';
}

export function rayJobShapeProblem(obj: JsonObject): string | undefined {
  const metaProblem = metadataShapeProblem(obj);
  if (metaProblem !== undefined) return metaProblem;
  if (obj.spec !== undefined && obj.spec !== null && !isJsonObject(obj.spec)) return 'object.spec must be an object';
  if (obj.status !== undefined && obj.status !== null && !isJsonObject(obj.status)) return 'object.status must be an object';
  return undefined;
}

export function defaultRayJob(job: JsonObject, ctx: RayJobDefaultingContext): DefaultingResult {
  const result: DefaultingResult = { patch: [], changes: [], warnings: [] };
  if (ctx.operation !== 'CREATE') return result;

  if (!isJsonObject(job.status)) {
    setContainer(result.patch, '', job, 'status', () => ({ jobDeploymentStatus: 'New' }));
    result.changes.push('set status.jobDeploymentStatus New');
  } else if (
    job.status.jobDeploymentStatus === undefined ||
    job.status.jobDeploymentStatus === null ||
    job.status.jobDeploymentStatus === ''
  ) {
    setMember(result.patch, '/status', job.status, 'jobDeploymentStatus', 'New');
    result.changes.push('set status.jobDeploymentStatus New');
  }

  const spec = job.spec;
  if (isJsonObject(spec)) {
    for (const [field, value] of RAYJOB_SPEC_DEFAULTS) {
      if (spec[field] === undefined || spec[field] === null) {
        setMember(result.patch, '/spec', spec, field, value);
        result.changes.push(`set spec.${field} ${value}`);
      }
    }
  }
  return result;
}
