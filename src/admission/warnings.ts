// Admission warnings (AdmissionResponse.warnings, which kubectl prints as "Warning: ..."): objects that are
// legal but will surprise. Pure.
// - A RayJob with activeDeadlineSeconds whose deletion rules all key on jobStatus: past the deadline the
//   RayJob ends jobDeploymentStatus Failed while jobStatus may still be RUNNING, so no rule ever matches and
//   the cluster is kept (KubeRay #5184).
// - Autoscaler settings without enableInTreeAutoscaling: no autoscaler runs, so they do nothing.
// - Fields raykeeper's own RayCluster operator (standalone, without KubeRay) does not act on yet
//   (src/raycluster/desired.ts unsupportedFields; for a RayJob, its rayClusterSpec). Not beside KubeRay
//   (WarningOptions.companion): there KubeRay's operator runs the pods and acts on them.
import { unsupportedFields } from '../raycluster/desired.ts';
import type { RayCluster, RayClusterSpec, RayJob } from '../types.ts';
import type { ObjectMeta } from '../../kube/model.ts';

/** The API server may truncate warnings over 256 characters and drop many; we send at most these. */
export const MAX_WARNINGS = 8;
export const MAX_WARNING_LENGTH = 256;

/** At most MAX_WARNINGS, each at most MAX_WARNING_LENGTH characters, printable ASCII (header-safe). */
export function boundWarnings(warnings: readonly string[]): string[] {
  const out: string[] = [];
  for (const w of warnings.slice(0, MAX_WARNINGS)) {
    const clean = w.replace(/[^\x20-\x7e]/g, '?');
    out.push(clean.length > MAX_WARNING_LENGTH ? `${clean.slice(0, MAX_WARNING_LENGTH - 3)}...` : clean);
  }
  if (warnings.length > MAX_WARNINGS) out[MAX_WARNINGS - 1] = `... and ${warnings.length - MAX_WARNINGS + 1} more warnings`;
  return out;
}

export interface WarningOptions {
  /** Beside KubeRay (companion mode): our own operator's limits are not the user's concern. */
  companion?: boolean;
}

/** `--companion on|off` of `raykeeper webhook` and `raykeeper mutate` (absent: off). */
export function companionWarningOptions(raw: string | undefined): WarningOptions {
  const value = (raw ?? 'off').trim().toLowerCase();
  if (value !== 'on' && value !== 'off') throw new Error(`--companion must be on or off, got ${JSON.stringify(raw)}`);
  return { companion: value === 'on' };
}

function clusterSpecWarnings(spec: RayClusterSpec | undefined, metadata: ObjectMeta, where: string, options: WarningOptions): string[] {
  if (spec === undefined || spec === null || typeof spec !== 'object') return [];
  const out: string[] = [];
  const autoscalerOptions = spec['autoscalerOptions'];
  if (autoscalerOptions !== undefined && autoscalerOptions !== null && spec.enableInTreeAutoscaling !== true) {
    out.push(
      `${where}autoscalerOptions is set but ${where}enableInTreeAutoscaling is not true: no autoscaler runs, the options do nothing`,
    );
  }
  if (options.companion === true) return out;
  const cluster: RayCluster = { metadata, spec };
  for (const u of unsupportedFields(cluster)) {
    const field = u.field.startsWith('spec.') ? `${where}${u.field.slice('spec.'.length)}` : u.field;
    out.push(
      `raykeeper's own RayCluster operator (without KubeRay) does not act on ${field}: ${u.why}${u.refused ? ' (no pods are started)' : ''}`,
    );
  }
  return out;
}

export function rayClusterWarnings(cluster: RayCluster, options: WarningOptions = {}): string[] {
  return clusterSpecWarnings(cluster.spec, cluster.metadata ?? {}, 'spec.', options);
}

export function rayJobWarnings(job: RayJob, options: WarningOptions = {}): string[] {
  const out: string[] = [];
  const spec = job.spec;
  const rules = spec?.deletionStrategy?.deletionRules;
  if (typeof spec?.activeDeadlineSeconds === 'number' && Array.isArray(rules) && rules.length > 0) {
    const onJobStatusOnly = rules.every((r) => {
      const condition = r?.condition;
      return condition?.jobStatus !== undefined && condition?.jobStatus !== null && !condition?.jobDeploymentStatus;
    });
    if (onJobStatusOnly) {
      out.push(
        'spec.activeDeadlineSeconds with deletionRules only on jobStatus: past the deadline jobStatus can stay RUNNING, no rule ' +
          'matches and the RayCluster is kept (KubeRay #5184); add a rule on jobDeploymentStatus Failed',
      );
    }
  }
  out.push(...clusterSpecWarnings(spec?.rayClusterSpec, { ...job.metadata, labels: {} }, 'spec.rayClusterSpec.', options));
  return out;
}
