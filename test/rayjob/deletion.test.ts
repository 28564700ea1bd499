// RayJob deletion: KubeRay v1.6's deletionStrategy validation (same messages) and what a finished RayJob
// does (deletion rules, legacy policies, shutdownAfterJobFinishes), as tables over the pure state machine.
import t, { type Test } from 'tap';
import {
  extendDeletionRecord,
  formatDeletionRecord,
  planFinished,
  readDeletionRecord,
  ruleKey,
  validateDeletionConfiguration,
  type DeletionRecord,
} from '../../src/rayjob/deletion.ts';
import { DELETION_RECORD_ANNOTATION } from '../../src/rayjob/constants.ts';
import { decideRayJob } from '../../src/rayjob/machine/decide.ts';
import { defaultMachineConfig, type RayJobStep } from '../../src/rayjob/machine/vocabulary.ts';
import { validateRayJob } from '../../src/rayjob/validation.ts';
import type { DeletionRule, RayCluster, RayJob } from '../../src/types.ts';
import { at, cluster, iso, rayJob } from './fixtures.ts';

const rule = (policy: string, condition: DeletionRule['condition']): DeletionRule => ({ policy, condition });
const onJob = (status: string, ttlSeconds = 0) => ({ jobStatus: status, ttlSeconds });
const onDeployment = (status: string, ttlSeconds = 0) => ({ jobDeploymentStatus: status, ttlSeconds });
const withRules = (...rules: DeletionRule[]) => ({ shutdownAfterJobFinishes: false, deletionStrategy: { deletionRules: rules } });
const legacy = (onSuccess: string, onFailure: string, extra: Record<string, unknown> = {}) => ({
  deletionStrategy: { onSuccess: { policy: onSuccess }, onFailure: { policy: onFailure } },
  ...extra,
});

t.test('validation: KubeRay validateDeletionConfiguration, message for message', async (t) => {
  const cases: Array<{ name: string; spec: Record<string, unknown>; want: string | undefined }> = [
    { name: 'no strategy', spec: {}, want: undefined },
    {
      name: 'ttl without shutdownAfterJobFinishes',
      spec: { shutdownAfterJobFinishes: false, ttlSecondsAfterFinished: 10 },
      want: 'The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false cannot have TTLSecondsAfterFinished',
    },
    { name: 'rules alone', spec: withRules(rule('DeleteCluster', onJob('SUCCEEDED'))), want: undefined },
    {
      name: 'rules with shutdownAfterJobFinishes',
      spec: { ...withRules(rule('DeleteCluster', onJob('SUCCEEDED'))), shutdownAfterJobFinishes: true },
      want: 'The RayJob spec is invalid: spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules are mutually exclusive',
    },
    {
      name: 'rules and legacy',
      spec: {
        shutdownAfterJobFinishes: false,
        deletionStrategy: { onSuccess: { policy: 'DeleteCluster' }, deletionRules: [rule('DeleteCluster', onJob('FAILED'))] },
      },
      want: 'The RayJob spec is invalid: Cannot use both legacy onSuccess/onFailure fields and deletionRules simultaneously',
    },
    {
      name: 'empty strategy',
      spec: { shutdownAfterJobFinishes: false, deletionStrategy: { deletionRules: [] } },
      want: 'The RayJob spec is invalid: DeletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules field (cannot be empty)',
    },
    {
      name: 'legacy with one side only',
      spec: { deletionStrategy: { onSuccess: { policy: 'DeleteCluster' } } },
      want: 'both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set when using the legacy deletion policy fields of DeletionStrategy',
    },
    {
      name: 'legacy without a policy',
      spec: { deletionStrategy: { onSuccess: {}, onFailure: { policy: 'DeleteCluster' } } },
      want: 'the DeletionPolicyType field of DeletionStrategy.OnSuccess cannot be unset when DeletionStrategy is enabled',
    },
    {
      name: 'legacy DeleteNone with shutdownAfterJobFinishes',
      spec: legacy('DeleteCluster', 'DeleteNone', { shutdownAfterJobFinishes: true }),
      want: "The RayJob spec is invalid: shutdownAfterJobFinshes is set to 'true' while deletion policy is 'DeleteNone'",
    },
    {
      name: 'legacy DeleteCluster with clusterSelector',
      spec: { ...legacy('DeleteCluster', 'DeleteNone', { shutdownAfterJobFinishes: false }), clusterSelector: { 'ray.io/cluster': 'c' } },
      want: "the ClusterSelector mode doesn't support DeletionStrategy=DeleteCluster on success",
    },
    {
      name: 'legacy DeleteWorkers with autoscaling',
      spec: {
        ...legacy('DeleteWorkers', 'DeleteCluster', { shutdownAfterJobFinishes: false }),
        rayClusterSpec: { enableInTreeAutoscaling: true, headGroupSpec: { template: { spec: { containers: [{ name: 'ray-head' }] } } } },
      },
      want: 'DeletionStrategy=DeleteWorkers currently does not support RayCluster with autoscaling enabled',
    },
    {
      name: 'a condition with both statuses',
      spec: withRules(rule('DeleteCluster', { jobStatus: 'SUCCEEDED', jobDeploymentStatus: 'Failed' })),
      want: 'deletionRules[0]: cannot set both JobStatus and JobDeploymentStatus at the same time',
    },
    {
      name: 'a condition with neither',
      spec: withRules(rule('DeleteCluster', { ttlSeconds: 5 })),
      want: 'deletionRules[0]: exactly one of JobStatus and JobDeploymentStatus must be set',
    },
    {
      name: 'a negative ttl',
      spec: withRules(rule('DeleteCluster', onJob('SUCCEEDED', -1))),
      want: 'deletionRules[0]: TTLSeconds must be non-negative',
    },
    {
      name: 'DeleteWorkers with clusterSelector',
      spec: { ...withRules(rule('DeleteWorkers', onJob('SUCCEEDED'))), clusterSelector: { 'ray.io/cluster': 'c' } },
      want: "deletionRules[0]: DeletionPolicyType 'DeleteWorkers' not supported when ClusterSelector is set",
    },
    {
      name: 'duplicates, and TTLs out of order, all reported (errors.Join)',
      spec: withRules(
        rule('DeleteCluster', onJob('SUCCEEDED', 10)),
        rule('DeleteCluster', onJob('SUCCEEDED', 20)),
        rule('DeleteWorkers', onJob('SUCCEEDED', 30)),
        rule('DeleteSelf', onJob('SUCCEEDED', 5)),
      ),
      want: [
        "deletionRules[1]: duplicate rule for DeletionPolicyType 'DeleteCluster' and JobStatus 'SUCCEEDED'",
        "for JobStatus 'SUCCEEDED': DeleteCluster TTL (10) must be >= DeleteWorkers TTL (30)",
        "for JobStatus 'SUCCEEDED': DeleteSelf TTL (5) must be >= DeleteCluster TTL (10)",
      ].join('\n'),
    },
    {
      name: 'the same policy on two conditions is fine',
      spec: withRules(rule('DeleteCluster', onJob('SUCCEEDED')), rule('DeleteCluster', onDeployment('Failed'))),
      want: undefined,
    },
    {
      name: 'an unknown jobDeploymentStatus (the CRD enum)',
      spec: withRules(rule('DeleteCluster', onDeployment('Complete'))),
      want: 'deletionRules[0]: condition.jobDeploymentStatus must be Failed, got "Complete"',
    },
  ];
  for (const c of cases) {
    const job = rayJob('New', { spec: c.spec });
    t.equal(validateDeletionConfiguration(job), c.want, c.name);
    if (c.want !== undefined) t.equal(validateRayJob(job)?.eventReason, 'InvalidRayJobSpec', `${c.name}: the controller's reason`);
  }
});

interface Finished {
  state: 'Complete' | 'Failed';
  jobStatus: string;
  spec: Record<string, unknown>;
  done?: string[];
  unmatched?: boolean;
}

function finished(f: Finished): RayJob {
  const job = rayJob(f.state, { spec: f.spec, status: { jobStatus: f.jobStatus, endTime: iso(100) } });
  if (f.done || f.unmatched) {
    const record = formatDeletionRecord({ done: f.done ?? [], unmatched: f.unmatched === true }, job.metadata.uid);
    job.metadata.annotations = { ...job.metadata.annotations, [DELETION_RECORD_ANNOTATION]: record };
  }
  return job;
}

/** The deletion record after a step: the one its recordDeletion action writes (always last), else the stored one. */
function recordAfter(job: RayJob, step: RayJobStep, t: Test): DeletionRecord {
  const writes = step.actions.filter((a) => a.type === 'recordDeletion');
  if (writes.length === 0) return readDeletionRecord(job);
  t.equal(step.actions.at(-1)?.type, 'recordDeletion', 'the record is written after the action');
  const write = writes[0] as { record: string };
  return readDeletionRecord({ metadata: { uid: job.metadata.uid, annotations: { [DELETION_RECORD_ANNOTATION]: write.record } } });
}

const withoutRecord = (step: RayJobStep) => step.actions.filter((a) => a.type !== 'recordDeletion');

const live = (): RayCluster => ({ ...cluster('ready'), metadata: { ...cluster('ready').metadata, resourceVersion: '42' } });
const suspended = (): RayCluster => {
  const c = live();
  c.spec = { ...c.spec, workerGroupSpecs: (c.spec?.workerGroupSpecs ?? []).map((g) => ({ ...g, suspend: true })) };
  return c;
};

function decide(job: RayJob, clusterSeen: RayCluster | null, seconds: number, config = defaultMachineConfig()): RayJobStep {
  const d = decideRayJob(job, { cluster: clusterSeen }, at(seconds), config);
  if (d.kind !== 'step') throw new Error('left alone');
  return d;
}

t.test('deletion rules: what a finished RayJob does, pass by pass', async (t) => {
  const staged = withRules(rule('DeleteWorkers', onJob('SUCCEEDED', 0)), rule('DeleteCluster', onJob('SUCCEEDED', 60)));
  const cases: Array<{
    name: string;
    job: RayJob;
    cluster: RayCluster | null;
    now: number;
    actions: unknown[];
    done?: string[];
    requeueMs?: number;
    events?: string[];
  }> = [
    {
      name: 'DeleteWorkers due at endTime: suspend every worker group of the cluster as read; recorded',
      job: finished({ state: 'Complete', jobStatus: 'SUCCEEDED', spec: staged }),
      cluster: live(),
      now: 100,
      actions: [{ type: 'suspendWorkerGroups', name: 'demo-fghjk', resourceVersion: '42', groups: 1 }],
      done: ['DeleteWorkers:jobStatus=SUCCEEDED'],
      requeueMs: 3000,
    },
    {
      name: 'DeleteWorkers recorded: nothing again, wake for DeleteCluster at endTime + 60 s',
      job: finished({ state: 'Complete', jobStatus: 'SUCCEEDED', spec: staged, done: ['DeleteWorkers:jobStatus=SUCCEEDED'] }),
      cluster: live(), // workers resumed by hand: not suspended again
      now: 110,
      actions: [],
      done: ['DeleteWorkers:jobStatus=SUCCEEDED'],
      requeueMs: 50_000,
    },
    {
      name: 'TTL passed: DeleteCluster, the RayJob kept',
      job: finished({ state: 'Complete', jobStatus: 'SUCCEEDED', spec: staged, done: ['DeleteWorkers:jobStatus=SUCCEEDED'] }),
      cluster: suspended(),
      now: 160,
      actions: [{ type: 'deleteCluster', name: 'demo-fghjk' }],
      done: ['DeleteWorkers:jobStatus=SUCCEEDED', 'DeleteCluster:jobStatus=SUCCEEDED'],
    },
    {
      name: 'controller down past both TTLs: the most impactful (DeleteCluster) first; DeleteWorkers then found achieved',
      job: finished({ state: 'Complete', jobStatus: 'SUCCEEDED', spec: staged }),
      cluster: live(),
      now: 500,
      actions: [{ type: 'deleteCluster', name: 'demo-fghjk' }],
      done: ['DeleteCluster:jobStatus=SUCCEEDED'],
      requeueMs: 3000,
    },
    {
      name: '... next pass: the cluster gone, DeleteWorkers recorded as achieved, nothing to do',
      job: finished({ state: 'Complete', jobStatus: 'SUCCEEDED', spec: staged, done: ['DeleteCluster:jobStatus=SUCCEEDED'] }),
      cluster: null,
      now: 501,
      actions: [],
      done: ['DeleteCluster:jobStatus=SUCCEEDED', 'DeleteWorkers:jobStatus=SUCCEEDED'],
    },
    {
      name: 'workers already suspended by someone: recorded, not patched',
      job: finished({ state: 'Complete', jobStatus: 'SUCCEEDED', spec: withRules(rule('DeleteWorkers', onJob('SUCCEEDED'))) }),
      cluster: suspended(),
      now: 100,
      actions: [],
      done: ['DeleteWorkers:jobStatus=SUCCEEDED'],
    },
    {
      name: 'DeleteSelf: delete the RayJob (its RayCluster goes with it by owner reference)',
      job: finished({ state: 'Failed', jobStatus: 'FAILED', spec: withRules(rule('DeleteSelf', onJob('FAILED', 5))) }),
      cluster: live(),
      now: 105,
      actions: [{ type: 'deleteRayJob' }],
      done: [], // the RayJob goes: nothing to record on it
    },
    {
      name: 'a rule on the other jobStatus does not match',
      job: finished({
        state: 'Complete',
        jobStatus: 'SUCCEEDED',
        spec: withRules(rule('DeleteCluster', onJob('FAILED')), rule('DeleteNone', onJob('SUCCEEDED'))),
      }),
      cluster: live(),
      now: 100,
      actions: [],
      done: ['DeleteNone:jobStatus=SUCCEEDED'],
    },
    {
      name: 'jobDeploymentStatus Failed matches a deadline-exceeded RayJob whose jobStatus is still RUNNING',
      job: finished({ state: 'Failed', jobStatus: 'RUNNING', spec: withRules(rule('DeleteCluster', onDeployment('Failed'))) }),
      cluster: live(),
      now: 100,
      actions: [{ type: 'deleteCluster', name: 'demo-fghjk' }],
      done: ['DeleteCluster:jobDeploymentStatus=Failed'],
    },
    {
      name: 'kuberay #5184: rules key only on jobStatus, the job ended RUNNING: cluster kept, one Warning',
      job: finished({
        state: 'Failed',
        jobStatus: 'RUNNING',
        spec: withRules(rule('DeleteCluster', onJob('SUCCEEDED')), rule('DeleteCluster', onJob('FAILED'))),
      }),
      cluster: live(),
      now: 100,
      actions: [],
      events: ['DeletionRulesUnmatched'],
    },
    {
      name: '... the Warning once: the status remembers it',
      job: finished({
        state: 'Failed',
        jobStatus: 'RUNNING',
        unmatched: true,
        spec: withRules(rule('DeleteCluster', onJob('SUCCEEDED')), rule('DeleteCluster', onJob('FAILED'))),
      }),
      cluster: live(),
      now: 200,
      actions: [],
      events: [],
    },
    {
      name: 'legacy onSuccess DeleteCluster after ttlSecondsAfterFinished',
      job: finished({
        state: 'Complete',
        jobStatus: 'SUCCEEDED',
        spec: legacy('DeleteCluster', 'DeleteNone', { shutdownAfterJobFinishes: false }),
      }),
      cluster: live(),
      now: 100,
      actions: [{ type: 'deleteCluster', name: 'demo-fghjk' }],
      done: ['DeleteCluster:legacy'],
    },
    {
      name: 'legacy onFailure DeleteWorkers waits for the ttl',
      job: finished({
        state: 'Failed',
        jobStatus: 'FAILED',
        spec: legacy('DeleteCluster', 'DeleteWorkers', { shutdownAfterJobFinishes: true, ttlSecondsAfterFinished: 30 }),
      }),
      cluster: live(),
      now: 110,
      actions: [],
      requeueMs: 20_000,
    },
    {
      name: 'legacy, the job ended RUNNING (deadline): no policy applies, cluster kept, Warning',
      job: finished({
        state: 'Failed',
        jobStatus: 'RUNNING',
        spec: legacy('DeleteCluster', 'DeleteCluster', { shutdownAfterJobFinishes: false }),
      }),
      cluster: live(),
      now: 100,
      actions: [],
      events: ['DeletionRulesUnmatched'],
    },
    {
      name: 'clusterSelector with DeleteSelf: the RayJob goes, never the selected cluster',
      job: finished({
        state: 'Complete',
        jobStatus: 'SUCCEEDED',
        spec: {
          ...withRules(rule('DeleteSelf', onJob('SUCCEEDED'))),
          clusterSelector: { 'ray.io/cluster': 'shared' },
          rayClusterSpec: undefined,
        },
      }),
      cluster: null,
      now: 100,
      actions: [{ type: 'deleteRayJob' }],
      done: [], // the RayJob goes
    },
    {
      name: 'shutdownAfterJobFinishes still deletes the cluster after the ttl (no strategy)',
      job: finished({ state: 'Complete', jobStatus: 'SUCCEEDED', spec: { shutdownAfterJobFinishes: true, ttlSecondsAfterFinished: 0 } }),
      cluster: live(),
      now: 100,
      actions: [{ type: 'deleteCluster', name: 'demo-fghjk' }],
    },
  ];
  for (const c of cases) {
    const step = decide(c.job, c.cluster, c.now);
    t.equal(step.next, step.from, `${c.name}: the state stays ${step.from}`);
    t.same(withoutRecord(step), c.actions, `${c.name}: actions`);
    t.same(recordAfter(c.job, step, t).done, c.done ?? [], `${c.name}: the deletion record`);
    if (c.requeueMs !== undefined) t.equal(step.requeueAfterMs, c.requeueMs, `${c.name}: requeue`);
    if (c.events !== undefined)
      t.same(
        step.events.map((e) => e.reason),
        c.events,
        `${c.name}: events`,
      );
  }
});

t.test('the unmatched Warning says what did not match and what would', async (t) => {
  const job = finished({ state: 'Failed', jobStatus: 'RUNNING', spec: withRules(rule('DeleteCluster', onJob('SUCCEEDED'))) });
  job.status = { ...job.status, reason: 'DeadlineExceeded' };
  const step = decide(job, live(), 100);
  t.equal(step.unmatchedDeletionRules, true, 'the step reports it (the metric)');
  t.equal(recordAfter(job, step, t).unmatched, true, 'the record remembers the Warning');
  t.equal(step.status.deletionRulesUnmatched, undefined, "nothing of it in status (KubeRay's CRD would prune it)");
  t.equal(
    step.events[0]?.message,
    'RayCluster ns1/demo-fghjk is kept: none of its 1 deletion rules (conditions JobStatus SUCCEEDED) matches this finished RayJob ' +
      '(jobDeploymentStatus Failed, jobStatus "RUNNING", reason DeadlineExceeded). A rule with condition.jobDeploymentStatus: Failed ' +
      'would match it; delete the RayCluster by hand to free its resources.',
  );
  t.equal(decide(job, null, 100).unmatchedDeletionRules, undefined, 'no cluster left: no leak, no Warning');
});

t.test("the deletion record: read leniently, extended in order, written compactly, only the RayJob's own", async (t) => {
  const withText = (text: string | undefined, status: Record<string, unknown> = {}): RayJob =>
    ({
      metadata: { name: 'j', uid: 'u1', ...(text === undefined ? {} : { annotations: { [DELETION_RECORD_ANNOTATION]: text } }) },
      status,
    }) as RayJob;
  const cases: Array<{ name: string; text: string | undefined; status?: Record<string, unknown>; want: DeletionRecord }> = [
    { name: 'absent', text: undefined, want: { done: [], unmatched: false } },
    {
      name: 'written by us',
      text: '{"uid":"u1","done":["DeleteWorkers:jobStatus=SUCCEEDED"]}',
      want: { done: ['DeleteWorkers:jobStatus=SUCCEEDED'], unmatched: false },
    },
    { name: 'with the Warning flag', text: '{"uid":"u1","done":[],"unmatched":true}', want: { done: [], unmatched: true } },
    {
      name: "another RayJob's (copied with kubectl get -o yaml): not ours, nothing done",
      text: '{"uid":"u0","done":["DeleteCluster:jobStatus=SUCCEEDED"],"unmatched":true}',
      want: { done: [], unmatched: false },
    },
    {
      name: 'no uid (written by hand): not ours',
      text: '{"done":["DeleteCluster:jobStatus=SUCCEEDED"]}',
      want: { done: [], unmatched: false },
    },
    { name: 'not JSON (edited by hand)', text: 'DeleteWorkers', want: { done: [], unmatched: false } },
    { name: 'JSON null', text: 'null', want: { done: [], unmatched: false } },
    {
      name: 'non-string keys dropped',
      text: '{"uid":"u1","done":["a",1,null,"b"],"unmatched":"yes"}',
      want: { done: ['a', 'b'], unmatched: false },
    },
    {
      name: "no annotation: an earlier raykeeper's status fields (an upgrade repeats nothing)",
      text: undefined,
      status: { deletionRulesDone: ['DeleteWorkers:jobStatus=SUCCEEDED'], deletionRulesUnmatched: true },
      want: { done: ['DeleteWorkers:jobStatus=SUCCEEDED'], unmatched: true },
    },
    {
      name: 'the annotation wins over the status fields',
      text: '{"uid":"u1","done":[]}',
      status: { deletionRulesDone: ['DeleteWorkers:jobStatus=SUCCEEDED'] },
      want: { done: [], unmatched: false },
    },
  ];
  for (const c of cases) t.same(readDeletionRecord(withText(c.text, c.status)), c.want, c.name);
  const extended = extendDeletionRecord({ done: ['a'], unmatched: false }, ['b', 'a', 'b', 'c'], true);
  t.same(extended, { done: ['a', 'b', 'c'], unmatched: true }, 'new keys appended once, in order; the flag raised');
  t.same(extendDeletionRecord(extended, [], false).unmatched, true, 'the flag is never lowered');
  t.equal(formatDeletionRecord({ done: ['a'], unmatched: false }, 'u1'), '{"uid":"u1","done":["a"]}');
  t.same(readDeletionRecord(withText(formatDeletionRecord(extended, 'u1'))), extended, 'written and read back');
});

t.test('a rule is keyed by policy and condition, not by its place or TTL', async (t) => {
  t.equal(ruleKey(rule('DeleteWorkers', onJob('SUCCEEDED', 10))), 'DeleteWorkers:jobStatus=SUCCEEDED');
  t.equal(ruleKey(rule('DeleteWorkers', onJob('SUCCEEDED', 99))), 'DeleteWorkers:jobStatus=SUCCEEDED');
  t.equal(ruleKey(rule('DeleteSelf', onDeployment('Failed'))), 'DeleteSelf:jobDeploymentStatus=Failed');
  const plan = planFinished({
    job: finished({ state: 'Complete', jobStatus: 'SUCCEEDED', spec: withRules(rule('DeleteWorkers', onJob('SUCCEEDED', 10))) }),
    status: { jobDeploymentStatus: 'Complete', jobStatus: 'SUCCEEDED' },
    done: ['DeleteWorkers:jobStatus=SUCCEEDED'],
    cluster: live(),
    endMs: at(0),
    now: at(5),
    deleteRayJobAfterJobFinishes: false,
  });
  t.same(plan, { kind: 'idle', record: [], note: 'every matching deletion rule is done' }, 'a done rule with a new TTL does not run again');
});

t.test('a finished RayJob with rules observes its cluster', async (t) => {
  const { observationPlan } = await import('../../src/rayjob/machine/observe.ts');
  t.equal(
    observationPlan(finished({ state: 'Complete', jobStatus: 'SUCCEEDED', spec: withRules(rule('DeleteCluster', onJob('SUCCEEDED'))) }))
      .cluster,
    true,
  );
  t.equal(
    observationPlan(finished({ state: 'Complete', jobStatus: 'SUCCEEDED', spec: { shutdownAfterJobFinishes: false } })).cluster,
    false,
  );
});
