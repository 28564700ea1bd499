// RayCronJob defaulting on CREATE (in place on the copy, each write recorded as patch operations):
// spec.concurrencyPolicy Allow, spec.successfulJobsHistoryLimit 3, spec.failedJobsHistoryLimit 1 when
// absent or null: batch/v1 CronJob's defaults for the fields raykeeper adds. KubeRay's RayCronJob has none
// of these fields (a cluster with KubeRay's CRD prunes them; KubeRay's controller keeps every RayJob and
// runs them concurrently). The controller reads an absent field with the same default, so the webhook
// being down changes nothing but what `kubectl get -o yaml` shows. Only inside an existing spec object.
// UPDATE, DELETE, CONNECT: nothing.
import type { JsonObject } from '../../kube/model.ts';
import {
  DEFAULT_CONCURRENCY_POLICY,
  DEFAULT_FAILED_JOBS_HISTORY_LIMIT,
  DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT,
} from '../raycronjob/decide.ts';
import { isJsonObject } from './json.ts';
import { setMember } from './patch.ts';
import type { DefaultingResult } from './raycluster.ts';
import { rayJobShapeProblem } from './rayjob.ts';

export const RAYCRONJOB_SPEC_DEFAULTS: ReadonlyArray<readonly [field: string, value: string | number]> = [
  ['concurrencyPolicy', DEFAULT_CONCURRENCY_POLICY],
  ['successfulJobsHistoryLimit', DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT],
  ['failedJobsHistoryLimit', DEFAULT_FAILED_JOBS_HISTORY_LIMIT],
];

/** The same shape rules as a RayJob's: metadata, spec and status objects when present. */
export const rayCronJobShapeProblem = rayJobShapeProblem;

export function defaultRayCronJob(cronJob: JsonObject, ctx: { operation: 'CREATE' | 'UPDATE' }): DefaultingResult {
  const result: DefaultingResult = { patch: [], changes: [], warnings: [] };
  if (ctx.operation !== 'CREATE' || !isJsonObject(cronJob.spec)) return result;
  const spec = cronJob.spec;
  for (const [field, value] of RAYCRONJOB_SPEC_DEFAULTS) {
    if (spec[field] === undefined || spec[field] === null) {
      setMember(result.patch, '/spec', spec, field, value);
      result.changes.push(`set spec.${field} ${value}`);
    }
  }
  return result;
}
