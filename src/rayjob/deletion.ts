// What a finished RayJob (Complete or Failed) does to its resources: KubeRay v1.6's three mechanisms,
// in its order of precedence, decided from the stored RayJob, the observed RayCluster and the clock.
// Pure: the state machine's Complete/Failed case (machine.ts decideFinished) turns the plan into actions.
//
//   1. clusterSelector: the cluster is not the RayJob's; only a DeleteSelf rule acts (KubeRay skips even
//      that, leaving a rule it accepted without effect: raykeeper deletes the RayJob, never the cluster);
//   2. spec.deletionStrategy.deletionRules: every rule whose condition matches the stored status is due
//      at endTime + ttlSeconds; of the due ones not yet done, the most impactful runs (DeleteSelf >
//      DeleteCluster > DeleteWorkers > DeleteNone), one a pass, then the next pass takes the next;
//   3. legacy onSuccess / onFailure: the policy for jobStatus SUCCEEDED / FAILED, at endTime +
//      spec.ttlSecondsAfterFinished;
//   4. shutdownAfterJobFinishes: the RayCluster (or, with DELETE_RAYJOB_CR_AFTER_JOB_FINISHES, the RayJob)
//      at endTime + ttlSecondsAfterFinished.
//
// A rule is done once: when it is carried out, or found already achieved in the world (the cluster is
// gone or being deleted; every worker group suspended), its key goes into the deletion record (the
// annotation DELETION_RECORD_ANNOTATION, not a status field: KubeRay's CRD prunes those), written after
// the action succeeded. A restarted controller reads the record and neither repeats a rule (workers
// resumed by hand are not suspended again) nor skips one (a TTL that passed while it was down is due at
// once).
//
// Never a silent leak (kuberay #5184): a finished RayJob whose cluster still exists and whose rules
// (or legacy policies) match nothing in its terminal state gets one Warning that says what did not
// match and what would; the resources stay as KubeRay leaves them.
import type { DeletionPolicyType, DeletionRule, RayCluster, RayJob, RayJobStatus } from '../types.ts';
import { DELETION_POLICIES } from '../types.ts';
import { DELETION_RECORD_ANNOTATION } from './constants.ts';
import { usesClusterSelector } from './ids.ts';
import { isAutoscalingEnabled } from '../raycluster/validation.ts';

// ---------------------------------------------------------------------------------------------
// Validation (KubeRay utils/validation.go validateDeletionConfiguration, same messages)

const INVALID = 'The RayJob spec is invalid:';
const RULE_JOB_STATUSES = ['SUCCEEDED', 'FAILED'];
const RULE_DEPLOYMENT_STATUSES = ['Failed'];
/** TTLs must not decrease along this order (lower TTL deletes earlier). */
const TTL_ORDER: DeletionPolicyType[] = ['DeleteWorkers', 'DeleteCluster', 'DeleteSelf'];

function present(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/** The rules mode is on: a non-empty deletionRules (an empty list reads as unset, as in KubeRay). */
export function deletionRules(job: RayJob): DeletionRule[] {
  const rules = job.spec?.deletionStrategy?.deletionRules;
  return Array.isArray(rules) ? rules : [];
}

function legacyConfigured(job: RayJob): boolean {
  const strategy = job.spec?.deletionStrategy;
  return present(strategy?.onSuccess) || present(strategy?.onFailure);
}

function conditionProblem(rule: DeletionRule): string | undefined {
  const condition = rule.condition ?? {};
  const hasJobStatus = present(condition.jobStatus);
  const hasDeploymentStatus = present(condition.jobDeploymentStatus);
  if (hasJobStatus && hasDeploymentStatus) return 'cannot set both JobStatus and JobDeploymentStatus at the same time';
  if (!hasJobStatus && !hasDeploymentStatus) return 'exactly one of JobStatus and JobDeploymentStatus must be set';
  // The CRD's enums (KubeRay's schema refuses these before its controller sees them).
  if (hasJobStatus && !RULE_JOB_STATUSES.includes(String(condition.jobStatus)))
    return `condition.jobStatus must be one of ${RULE_JOB_STATUSES.join(', ')}, got ${JSON.stringify(condition.jobStatus)}`;
  if (hasDeploymentStatus && !RULE_DEPLOYMENT_STATUSES.includes(String(condition.jobDeploymentStatus)))
    return `condition.jobDeploymentStatus must be ${RULE_DEPLOYMENT_STATUSES.join(', ')}, got ${JSON.stringify(condition.jobDeploymentStatus)}`;
  const ttl = condition.ttlSeconds;
  if (present(ttl) && (typeof ttl !== 'number' || !Number.isInteger(ttl))) return 'TTLSeconds must be an integer';
  if (typeof ttl === 'number' && ttl < 0) return 'TTLSeconds must be non-negative';
  if (!(DELETION_POLICIES as readonly string[]).includes(rule.policy))
    return `policy must be one of ${DELETION_POLICIES.join(', ')}, got ${JSON.stringify(rule.policy)}`;
  return undefined;
}

/** KubeRay's validateDeletionRules: every problem, joined by newlines (Go's errors.Join). */
function validateRules(job: RayJob, rules: DeletionRule[]): string | undefined {
  const selector = usesClusterSelector(job);
  const errors: string[] = [];
  const ttls = new Map<string, Map<string, number>>();
  rules.forEach((rule, i) => {
    const problem = conditionProblem(rule);
    if (problem !== undefined) return errors.push(`deletionRules[${i}]: ${problem}`);
    if (selector && (rule.policy === 'DeleteCluster' || rule.policy === 'DeleteWorkers'))
      return errors.push(`deletionRules[${i}]: DeletionPolicyType '${rule.policy}' not supported when ClusterSelector is set`);
    if (isAutoscalingEnabled(job.spec?.rayClusterSpec) && rule.policy === 'DeleteWorkers')
      return errors.push(`deletionRules[${i}]: DeletionPolicyType 'DeleteWorkers' not supported with autoscaling enabled`);
    const [type, value] = conditionOf(rule);
    const group = `${type}\u0000${value}`;
    const byPolicy = ttls.get(group) ?? new Map<string, number>();
    ttls.set(group, byPolicy);
    if (byPolicy.has(rule.policy))
      return errors.push(`deletionRules[${i}]: duplicate rule for DeletionPolicyType '${rule.policy}' and ${type} '${value}'`);
    byPolicy.set(rule.policy, ttlOf(rule));
    return undefined;
  });
  for (const [group, byPolicy] of ttls) {
    const [type, value] = group.split('\u0000');
    let previous: [string, number] | undefined;
    for (const policy of TTL_ORDER) {
      const ttl = byPolicy.get(policy);
      if (ttl === undefined) continue;
      if (previous && ttl < previous[1])
        errors.push(`for ${type} '${value}': ${policy} TTL (${ttl}) must be >= ${previous[0]} TTL (${previous[1]})`);
      previous = [policy, ttl];
    }
  }
  return errors.length > 0 ? errors.join('\n') : undefined;
}

function validateLegacy(job: RayJob): string | undefined {
  const strategy = job.spec?.deletionStrategy ?? {};
  if (!present(strategy.onSuccess) || !present(strategy.onFailure))
    return 'both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set when using the legacy deletion policy fields of DeletionStrategy';
  const onSuccess = strategy.onSuccess?.policy;
  const onFailure = strategy.onFailure?.policy;
  if (!present(onSuccess))
    return 'the DeletionPolicyType field of DeletionStrategy.OnSuccess cannot be unset when DeletionStrategy is enabled';
  if (!present(onFailure))
    return 'the DeletionPolicyType field of DeletionStrategy.OnFailure cannot be unset when DeletionStrategy is enabled';
  for (const policy of [onSuccess, onFailure]) {
    if (!(DELETION_POLICIES as readonly string[]).includes(String(policy)))
      return `${INVALID} deletion policy must be one of ${DELETION_POLICIES.join(', ')}, got ${JSON.stringify(policy)}`;
  }
  if (usesClusterSelector(job)) {
    if (onSuccess === 'DeleteCluster' || onSuccess === 'DeleteWorkers')
      return `the ClusterSelector mode doesn't support DeletionStrategy=${onSuccess} on success`;
    if (onFailure === 'DeleteCluster' || onFailure === 'DeleteWorkers')
      return `the ClusterSelector mode doesn't support DeletionStrategy=${onFailure} on failure`;
  }
  if ((onSuccess === 'DeleteWorkers' || onFailure === 'DeleteWorkers') && isAutoscalingEnabled(job.spec?.rayClusterSpec))
    return 'DeletionStrategy=DeleteWorkers currently does not support RayCluster with autoscaling enabled';
  if (job.spec?.shutdownAfterJobFinishes === true && (onSuccess === 'DeleteNone' || onFailure === 'DeleteNone'))
    return `${INVALID} shutdownAfterJobFinshes is set to 'true' while deletion policy is 'DeleteNone'`;
  return undefined;
}

/** KubeRay's validateDeletionConfiguration (the RayJobDeletionPolicy gate is on, as in KubeRay v1.6). */
export function validateDeletionConfiguration(job: RayJob): string | undefined {
  const spec = job.spec ?? {};
  const ttl = spec.ttlSecondsAfterFinished;
  if (spec.shutdownAfterJobFinishes !== true && typeof ttl === 'number' && ttl > 0)
    return `${INVALID} a RayJob with shutdownAfterJobFinishes set to false cannot have TTLSecondsAfterFinished`;
  if (!present(spec.deletionStrategy)) return undefined;
  const rules = deletionRules(job);
  const legacy = legacyConfigured(job);
  if (rules.length > 0 && spec.shutdownAfterJobFinishes === true)
    return `${INVALID} spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules are mutually exclusive`;
  if (rules.length > 0 && legacy) return `${INVALID} Cannot use both legacy onSuccess/onFailure fields and deletionRules simultaneously`;
  if (legacy) return validateLegacy(job);
  if (rules.length > 0) return validateRules(job, rules);
  return `${INVALID} DeletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules field (cannot be empty)`;
}

// ---------------------------------------------------------------------------------------------
// The plan for a finished RayJob

/** What a finished RayJob does now. */
export type FinishedPlan =
  /** Nothing more will happen (no mechanism, all done, or DeleteNone). */
  | { kind: 'idle'; record: string[]; note: string; unmatched?: string }
  /** The next rule is due at `at` (ms): wake then. */
  | { kind: 'wait'; at: number; record: string[]; note: string }
  /** Carry out `policy` now, then record `record` (it includes the rule carried out). */
  | { kind: 'act'; policy: Exclude<DeletionPolicyType, 'DeleteNone'>; record: string[]; note: string; more: boolean };

// ---------------------------------------------------------------------------------------------
// The record (DELETION_RECORD_ANNOTATION)

export interface DeletionRecord {
  /** ruleKey (or the legacy policy's key) of every rule carried out or found achieved. */
  done: string[];
  /** The Warning that no rule matches went out. */
  unmatched: boolean;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((k): k is string => typeof k === 'string') : [];
}

/**
 * The record as stored. It is this RayJob's only when it carries the RayJob's uid: annotations, unlike
 * status, survive `kubectl get -o yaml` into a new RayJob, whose rules must not read as done. Without the
 * annotation, the status fields an earlier raykeeper recorded in (status.deletionRulesDone /
 * deletionRulesUnmatched, on our CRD) are read, so an upgrade neither repeats nor re-warns; the next write
 * moves them to the annotation. Anything unreadable reads as empty (nothing done yet).
 */
export function readDeletionRecord(job: RayJob): DeletionRecord {
  const text = job.metadata.annotations?.[DELETION_RECORD_ANNOTATION];
  if (typeof text !== 'string') {
    const status = job.status ?? {};
    return { done: strings(status['deletionRulesDone']), unmatched: status['deletionRulesUnmatched'] === true };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { done: [], unmatched: false };
  }
  const record = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  if (record.uid !== job.metadata.uid) return { done: [], unmatched: false };
  return { done: strings(record.done), unmatched: record.unmatched === true };
}

/** The record with `keys` added (in order, no repeats) and the Warning flag raised if `unmatched`. */
export function extendDeletionRecord(record: DeletionRecord, keys: readonly string[], unmatched: boolean): DeletionRecord {
  return {
    done: [...record.done, ...keys.filter((k, i) => !record.done.includes(k) && keys.indexOf(k) === i)],
    unmatched: record.unmatched || unmatched,
  };
}

export function sameDeletionRecord(a: DeletionRecord, b: DeletionRecord): boolean {
  return a.unmatched === b.unmatched && a.done.length === b.done.length && a.done.every((k, i) => b.done[i] === k);
}

/** The annotation's text for the RayJob `uid`: `unmatched` only when raised. */
export function formatDeletionRecord(record: DeletionRecord, uid: string | undefined): string {
  return JSON.stringify({ uid, done: record.done, ...(record.unmatched ? { unmatched: true } : {}) });
}

// ---------------------------------------------------------------------------------------------
// The plan

export interface FinishedInput {
  job: RayJob;
  status: RayJobStatus;
  /** The deletion record's done keys (readDeletionRecord). */
  done: readonly string[];
  /** The RayJob's RayCluster: null = not found; undefined = not observed. */
  cluster: RayCluster | null | undefined;
  /** endTime in ms (the caller records one first when it is missing). */
  endMs: number;
  now: number;
  /** DELETE_RAYJOB_CR_AFTER_JOB_FINISHES (shutdownAfterJobFinishes deletes the RayJob itself). */
  deleteRayJobAfterJobFinishes: boolean;
}

const IMPACT: Record<DeletionPolicyType, number> = { DeleteSelf: 4, DeleteCluster: 3, DeleteWorkers: 2, DeleteNone: 1 };

function conditionOf(rule: DeletionRule): [string, string] {
  const c = rule.condition ?? {};
  return present(c.jobStatus) ? ['JobStatus', String(c.jobStatus)] : ['JobDeploymentStatus', String(c.jobDeploymentStatus)];
}

function ttlOf(rule: DeletionRule): number {
  const ttl = rule.condition?.ttlSeconds;
  return typeof ttl === 'number' ? ttl : 0;
}

/** A rule's identity in the deletion record: its policy and condition (unique, by validation). */
export function ruleKey(rule: DeletionRule): string {
  const [type, value] = conditionOf(rule);
  return `${rule.policy}:${type === 'JobStatus' ? 'jobStatus' : 'jobDeploymentStatus'}=${value}`;
}

function legacyKey(policy: string): string {
  return `${policy}:legacy`;
}

function matches(rule: DeletionRule, status: RayJobStatus): boolean {
  const c = rule.condition ?? {};
  if (present(c.jobStatus)) return c.jobStatus === (status.jobStatus ?? '');
  return c.jobDeploymentStatus === status.jobDeploymentStatus;
}

/** Whether the world already shows the policy's effect (KubeRay's isDeletionActionCompleted). */
export function achieved(policy: DeletionPolicyType, cluster: RayCluster | null): boolean {
  switch (policy) {
    case 'DeleteNone':
      return true;
    case 'DeleteSelf':
      return false; // the RayJob is still here
    case 'DeleteCluster':
      return cluster === null || present(cluster.metadata.deletionTimestamp);
    case 'DeleteWorkers':
      return (
        cluster === null ||
        present(cluster.metadata.deletionTimestamp) ||
        (cluster.spec?.workerGroupSpecs ?? []).every((group) => group.suspend === true)
      );
  }
}

function clusterExists(cluster: RayCluster | null | undefined): cluster is RayCluster {
  return cluster !== null && cluster !== undefined && !present(cluster.metadata.deletionTimestamp);
}

function describeStatus(status: RayJobStatus): string {
  const reason = (status.reason ?? '') !== '' ? `, reason ${status.reason}` : '';
  return `jobDeploymentStatus ${status.jobDeploymentStatus ?? ''}, jobStatus ${JSON.stringify(status.jobStatus ?? '')}${reason}`;
}

/** The Warning for a finished RayJob whose cluster stays because no rule matches (kuberay #5184). */
function unmatchedWarning(input: FinishedInput, what: string): string | undefined {
  const { status, cluster, job } = input;
  if (!clusterExists(cluster)) return undefined;
  const name = `${job.metadata.namespace ?? 'default'}/${cluster.metadata.name ?? ''}`;
  return (
    `RayCluster ${name} is kept: ${what} matches this finished RayJob (${describeStatus(status)}). ` +
    `A rule with condition.jobDeploymentStatus: ${status.jobDeploymentStatus ?? ''} would match it` +
    (status.jobDeploymentStatus === 'Complete' ? ' (only Failed is allowed: add a jobStatus rule instead)' : '') +
    '; delete the RayCluster by hand to free its resources.'
  );
}

function planRules(input: FinishedInput, rules: DeletionRule[]): FinishedPlan {
  const { status, cluster, endMs, now } = input;
  const done = new Set(input.done);
  const record: string[] = [];
  const due: DeletionRule[] = [];
  let wake: number | undefined;
  let matched = 0;
  const selector = usesClusterSelector(input.job);
  for (const rule of rules) {
    if (!matches(rule, status)) continue;
    matched++;
    const key = ruleKey(rule);
    if (done.has(key)) continue;
    // The selected cluster is not the RayJob's: only DeleteSelf (and DeleteNone) can act on it.
    if (selector && rule.policy !== 'DeleteSelf' && rule.policy !== 'DeleteNone') continue;
    const at = endMs + ttlOf(rule) * 1000;
    if (now < at) {
      wake = wake === undefined ? at : Math.min(wake, at);
      continue;
    }
    if (rule.policy !== 'DeleteSelf' && cluster === undefined) continue; // not observed: the caller observes it
    if (achieved(rule.policy as DeletionPolicyType, cluster ?? null)) {
      record.push(key);
      continue;
    }
    due.push(rule);
  }
  if (due.length > 0) {
    const rule = due.reduce((a, b) => (IMPACT[b.policy as DeletionPolicyType] > IMPACT[a.policy as DeletionPolicyType] ? b : a));
    const policy = rule.policy as Exclude<DeletionPolicyType, 'DeleteNone'>;
    return {
      kind: 'act',
      policy,
      record: [...record, ruleKey(rule)],
      more: due.length > 1 || wake !== undefined,
      note: `deletion rule ${ruleKey(rule)} due (ttl ${ttlOf(rule)} s)`,
    };
  }
  if (wake !== undefined) return { kind: 'wait', at: wake, record, note: `next deletion rule due in ${Math.ceil((wake - now) / 1000)} s` };
  if (matched === 0) {
    const keyed = rules.map((r) => conditionOf(r).join(' ')).filter((v, i, all) => all.indexOf(v) === i);
    const unmatched = unmatchedWarning(input, `none of its ${rules.length} deletion rules (conditions ${keyed.join(', ')})`);
    return { kind: 'idle', record, note: 'no deletion rule matches the terminal state', ...(unmatched ? { unmatched } : {}) };
  }
  return { kind: 'idle', record, note: 'every matching deletion rule is done' };
}

function planLegacy(input: FinishedInput): FinishedPlan {
  const { job, status, cluster, endMs, now } = input;
  const strategy = job.spec?.deletionStrategy ?? {};
  const jobStatus = status.jobStatus ?? '';
  const policy = jobStatus === 'SUCCEEDED' ? strategy.onSuccess?.policy : jobStatus === 'FAILED' ? strategy.onFailure?.policy : undefined;
  if (!present(policy)) {
    const unmatched = unmatchedWarning(input, 'neither deletionStrategy.onSuccess nor onFailure (they key on jobStatus SUCCEEDED, FAILED)');
    return {
      kind: 'idle',
      record: [],
      note: `legacy policies do not apply to jobStatus ${JSON.stringify(jobStatus)}`,
      ...(unmatched ? { unmatched } : {}),
    };
  }
  if (policy === 'DeleteNone') return { kind: 'idle', record: [], note: 'legacy policy DeleteNone' };
  const key = legacyKey(String(policy));
  if (input.done.includes(key)) return { kind: 'idle', record: [], note: `legacy policy ${policy} done` };
  const at = endMs + (job.spec?.ttlSecondsAfterFinished ?? 0) * 1000;
  if (now < at) return { kind: 'wait', at, record: [], note: 'waiting for ttlSecondsAfterFinished (legacy policy)' };
  if (usesClusterSelector(job) && policy !== 'DeleteSelf') return { kind: 'idle', record: [], note: 'the selected cluster is not ours' };
  if (policy !== 'DeleteSelf') {
    if (cluster === undefined) return { kind: 'idle', record: [], note: 'cluster not observed' };
    if (achieved(policy as DeletionPolicyType, cluster)) return { kind: 'idle', record: [key], note: `legacy policy ${policy} achieved` };
  }
  return {
    kind: 'act',
    policy: policy as Exclude<DeletionPolicyType, 'DeleteNone'>,
    record: [key],
    more: false,
    note: `legacy policy ${policy}`,
  };
}

function planShutdown(input: FinishedInput): FinishedPlan {
  const { job, cluster, endMs, now } = input;
  if (usesClusterSelector(job)) return { kind: 'idle', record: [], note: 'finished; the selected cluster is not ours to delete' };
  if (job.spec?.shutdownAfterJobFinishes !== true) return { kind: 'idle', record: [], note: 'finished; shutdownAfterJobFinishes is off' };
  const at = endMs + (job.spec?.ttlSecondsAfterFinished ?? 0) * 1000;
  if (now < at) return { kind: 'wait', at, record: [], note: 'waiting for ttlSecondsAfterFinished' };
  if (input.deleteRayJobAfterJobFinishes)
    return { kind: 'act', policy: 'DeleteSelf', record: [], more: false, note: 'ttl passed; deleting the RayJob' };
  if (clusterExists(cluster) && (input.status.rayClusterName ?? '') !== '')
    return { kind: 'act', policy: 'DeleteCluster', record: [], more: false, note: 'ttl passed; deleting the RayCluster' };
  return { kind: 'idle', record: [], note: 'ttl passed; the RayCluster is gone' };
}

/** The plan for a Complete or Failed RayJob (see the top of this file for the order). */
export function planFinished(input: FinishedInput): FinishedPlan {
  const rules = deletionRules(input.job);
  if (rules.length > 0) return planRules(input, rules);
  if (legacyConfigured(input.job)) return planLegacy(input);
  return planShutdown(input);
}

/** Whether a finished RayJob's plan needs its RayCluster observed. */
export function finishedNeedsCluster(job: RayJob): boolean {
  if (usesClusterSelector(job)) return false;
  return deletionRules(job).length > 0 || legacyConfigured(job) || job.spec?.shutdownAfterJobFinishes === true;
}
