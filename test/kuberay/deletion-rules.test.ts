// The same RayJobs with deletion rules under KubeRay v1.6.2's real operator (its `RayJobDeletionPolicy`
// gate is beta and on by default there: pkg/features/features.go) and under ours, side by side on one
// kube-apiserver with KubeRay's CRDs, each operator watching a namespace of its own: which RayJobs and
// RayClusters exist when, and the final status both write, compared in one test.
//
// There is no kubelet and no Ray here, so every RayJob ends without Ray: `activeDeadlineSeconds` passes
// while it is Initializing (its RayCluster created, never ready) and both operators end it `Failed` /
// `DeadlineExceeded` with `jobStatus` still empty (rayjob_controller.go checkActiveDeadlineAndUpdateStatusIfNeeded;
// updateRayJobStatus stamps endTime). Then the Failed case runs the rules (handleDeletionRules): a rule
// matches on `jobStatus` or `jobDeploymentStatus`, is due at endTime + ttlSeconds, and is done when the
// world shows it (isDeletionActionCompleted). The four RayJobs, all at once in each namespace:
// - `delete-cluster`: DeleteCluster on jobDeploymentStatus Failed, ttl 0 -> the RayCluster goes, the RayJob stays;
// - `delete-self`: DeleteSelf on jobDeploymentStatus Failed -> the RayJob goes. Its RayCluster goes with it
//   only through the garbage collector (an ownerReference to the RayJob; neither operator deletes it, KubeRay
//   just calls Delete on the RayJob): this control plane has no kube-controller-manager, so under both the
//   cluster is left with an owner that no longer exists, which is what is compared;
// - `jobstatus-only` (kuberay #5184): DeleteCluster on jobStatus SUCCEEDED and on FAILED; neither matches
//   jobStatus "" -> the cluster is kept by both; ours also writes one Warning `DeletionRulesUnmatched`
//   and counts it in raykeeper_rayjob_unmatched_deletion_rules (KubeRay logs nothing about it);
// - `ttl-10`: DeleteCluster on jobDeploymentStatus Failed after 10 s -> kept before the TTL, gone after.
// Differences, asserted where they show: when (KubeRay fails an Initializing RayJob on its next 3 s poll
// past the deadline and deletes a TTL'd cluster at endTime + ttl + 2 s; ours at the deadline and at
// endTime + ttl); events (our own Warnings RayJobFailed, FailedToStopRayJob and DeletionRulesUnmatched);
// and on KubeRay's CRD the API server would prune a status field of ours, so the deletion record is an annotation (asserted kept).
import t from 'tap';
import { Watch } from '@kubernetes/client-node';
import { startController } from '../../controller/main.ts';
import { rayJobModule } from '../../controller/rayjob/module.ts';
import { createMetricsRegistry } from '../../kube/metrics.ts';
import { MERGE_PATCH, type KubeClient } from '../../kube/client.ts';
import { readDeletionRecord } from '../../src/rayjob/deletion.ts';
import { EVENTS, NAMESPACES } from '../../kube/resources.ts';
import { RAYCLUSTERS, RAYJOBS, type RayCluster, type RayJob } from '../../src/types.ts';
import type { ControlPlane } from '../../localcluster/control-plane.ts';
import { EVENT_DELETION_RULES_UNMATCHED } from '../../src/event-reasons.ts';
import { sleep } from '../../kube/backoff.ts';
import { until } from '../helpers/harness.ts';
import { missingPart } from '../helpers/parts.ts';
import { capturingLogger, kubeRayControlPlane, missingKubeRay, startKubeRay } from './helpers.ts';

const missing = missingKubeRay();
if (missing) t.fail(missingPart(missing));

const DEADLINE_S = 5;
const TTL_S = 10;
const NAMESPACES_UNDER_TEST = ['kuberay', 'raykeeper'] as const;
type Ns = (typeof NAMESPACES_UNDER_TEST)[number];

const RULES: Record<string, unknown[]> = {
  'delete-cluster': [{ policy: 'DeleteCluster', condition: { jobDeploymentStatus: 'Failed', ttlSeconds: 0 } }],
  'delete-self': [{ policy: 'DeleteSelf', condition: { jobDeploymentStatus: 'Failed', ttlSeconds: 0 } }],
  'jobstatus-only': [
    { policy: 'DeleteCluster', condition: { jobStatus: 'SUCCEEDED' } },
    { policy: 'DeleteCluster', condition: { jobStatus: 'FAILED' } },
  ],
  [`ttl-${TTL_S}`]: [{ policy: 'DeleteCluster', condition: { jobDeploymentStatus: 'Failed', ttlSeconds: TTL_S } }],
};
const NAMES = Object.keys(RULES);

function rayJob(name: string): RayJob {
  return {
    apiVersion: 'ray.io/v1',
    kind: 'RayJob',
    metadata: { name },
    spec: {
      entrypoint: 'python -c "print(1)"',
      activeDeadlineSeconds: DEADLINE_S,
      deletionStrategy: { deletionRules: RULES[name] },
      rayClusterSpec: {
        headGroupSpec: { rayStartParams: {}, template: { spec: { containers: [{ name: 'ray-head', image: 'rayproject/ray:2.40.0' }] } } },
      },
    },
  } as RayJob;
}

/** Every watch event of a resource in a namespace, with when it arrived. */
async function record<T>(t: { teardown(fn: () => unknown): void }, cp: ControlPlane, path: string) {
  const seen: Array<{ type: string; obj: T; at: number }> = [];
  const req = await new Watch(cp.kubeConfig()).watch(
    path,
    {},
    (type, obj: T) => seen.push({ type, obj, at: Date.now() }),
    () => undefined,
  );
  t.teardown(() => req.abort());
  return seen;
}

const ownerOf = (c: RayCluster) => (c.metadata.ownerReferences ?? []).find((o) => o.kind === 'RayJob');

/** Which RayJobs (with their deployment status) and RayClusters (by owning RayJob) exist now. */
async function snapshot(kube: KubeClient, namespace: string): Promise<{ rayJobs: string[]; rayClusters: string[] }> {
  const jobs = (await kube.list({ ...RAYJOBS, namespace })).items;
  const clusters = (await kube.list({ ...RAYCLUSTERS, namespace })).items;
  const live = new Set(jobs.map((j) => j.metadata.uid));
  return {
    rayJobs: jobs.map((j) => `${j.metadata.name} ${j.status?.jobDeploymentStatus || 'New'}`).sort(),
    rayClusters: clusters
      .map((c) => {
        const owner = ownerOf(c);
        const state = c.metadata.deletionTimestamp ? ' (being deleted)' : '';
        return `of ${owner?.name ?? '<no owner>'}${live.has(owner?.uid) ? '' : ' (owner gone)'}${state}`;
      })
      .sort(),
  };
}

const ms = (time: string | undefined) => Date.parse(time ?? '');

if (!missing)
  t.test('RayJob deletion rules, KubeRay v1.6.2 and raykeeper: the same objects at the same times', { timeout: 150_000 }, async (t) => {
    const started = Date.now();
    const { cp, kube } = await kubeRayControlPlane((m) => t.comment(`control plane: ${m}`));
    t.teardown(async () => {
      kube.close();
      await cp.stop();
    });
    for (const name of [...NAMESPACES_UNDER_TEST, 'kuberay-lease']) await kube.create(NAMESPACES, { metadata: { name } });
    // The gate is left at v1.6.2's default (on), as a user runs it; the DeleteCluster cases fail without it.
    const kuberay = await startKubeRay(cp, { cleanup: false, leaseNamespace: 'kuberay-lease', args: ['--watch-namespace=kuberay'] });
    t.teardown(() => kuberay.stop());
    const { logger } = capturingLogger('warn');
    const metrics = createMetricsRegistry();
    const ours = await startController({
      kubeConfig: cp.kubeConfig(),
      watchNamespace: 'raykeeper',
      modules: [rayJobModule],
      // DeleteSelf on a RayJob whose jobStatus is not terminal stops the Ray job first (both operators;
      // both release the finalizer when that fails). No Ray here: a refused port fails at once, where the
      // default head-service name would wait for DNS. KubeRay's call fails at once too (dashboardURL "").
      moduleFlags: { 'rayjob-dashboard-url-template': 'http://127.0.0.1:1' },
      env: {},
      logger,
      metrics,
    });
    t.teardown(() => ours.stop().catch(() => undefined));
    await until(
      () => kuberay.log().includes('"logger":"controllers.RayJob","msg":"Starting workers"'),
      "KubeRay's RayJob controller",
      60_000,
      200,
    );
    t.match(
      kuberay.log(),
      /"msg":"Loaded feature gates","featureGates":\{[^}]*"RayJobDeletionPolicy":true/,
      'KubeRay: RayJobDeletionPolicy on (its default)',
    );

    const watched = {} as Record<
      Ns,
      { jobs: Array<{ type: string; obj: RayJob; at: number }>; clusters: Array<{ type: string; obj: RayCluster; at: number }> }
    >;
    for (const ns of NAMESPACES_UNDER_TEST)
      watched[ns] = {
        jobs: await record<RayJob>(t, cp, `/apis/ray.io/v1/namespaces/${ns}/rayjobs`),
        clusters: await record<RayCluster>(t, cp, `/apis/ray.io/v1/namespaces/${ns}/rayclusters`),
      };

    await Promise.all(
      NAMESPACES_UNDER_TEST.flatMap((namespace) => NAMES.map((name) => kube.create({ ...RAYJOBS, namespace }, rayJob(name)))),
    );

    // 1. Initializing: every RayJob has its RayCluster (never ready), under both.
    await until(
      async () => {
        for (const ns of NAMESPACES_UNDER_TEST) {
          const s = await snapshot(kube, ns);
          if (s.rayClusters.length < NAMES.length || !s.rayJobs.every((j) => j.endsWith(' Initializing'))) return false;
        }
        return true;
      },
      'every RayJob Initializing with its RayCluster in both namespaces',
      (DEADLINE_S - 1) * 1000,
      100,
    );
    const initializing = {
      rayJobs: NAMES.map((n) => `${n} Initializing`),
      rayClusters: NAMES.map((n) => `of ${n}`),
    };
    t.same(await snapshot(kube, 'kuberay'), initializing, 'KubeRay: every RayJob Initializing, each with its RayCluster');
    t.same(await snapshot(kube, 'raykeeper'), await snapshot(kube, 'kuberay'), 'raykeeper: the same while Initializing');

    // 2. Past the deadline: every RayJob Failed (or, DeleteSelf, gone); then what ttl 0 does, before the TTL.
    const finished = async (ns: Ns) =>
      (await kube.list({ ...RAYJOBS, namespace: ns })).items.every((j) => j.status?.jobDeploymentStatus === 'Failed');
    await until(
      async () => (await finished('kuberay')) && (await finished('raykeeper')),
      'every RayJob Failed or gone in both',
      20_000,
      200,
    );
    await sleep(2_500);
    const afterDeadline = {
      rayJobs: ['delete-cluster Failed', 'jobstatus-only Failed', `ttl-${TTL_S} Failed`],
      rayClusters: ['of delete-self (owner gone)', 'of jobstatus-only', `of ttl-${TTL_S}`],
    };
    t.same(
      await snapshot(kube, 'kuberay'),
      afterDeadline,
      `KubeRay: delete-cluster's cluster gone, delete-self gone (its cluster left to a GC), #5184's cluster kept, ttl-${TTL_S}'s kept before the TTL`,
    );
    t.same(await snapshot(kube, 'raykeeper'), await snapshot(kube, 'kuberay'), 'raykeeper: the same after the deadline');

    // The RayJobs' final status: what both write.
    const endOf: Record<string, number> = {};
    const end = (ns: Ns, name: string) => endOf[`${ns}/${name}`] ?? Number.NaN;
    for (const ns of NAMESPACES_UNDER_TEST) {
      for (const name of NAMES) {
        // delete-self is gone: its last stored version comes from the watch.
        const last = watched[ns].jobs.filter((e) => e.obj.metadata.name === name && e.type !== 'DELETED').at(-1)?.obj;
        const s = last?.status;
        t.same(
          { jobDeploymentStatus: s?.jobDeploymentStatus, reason: s?.reason, jobStatus: s?.jobStatus ?? '' },
          { jobDeploymentStatus: 'Failed', reason: 'DeadlineExceeded', jobStatus: '' },
          `${ns} ${name}: Failed, DeadlineExceeded, jobStatus still empty`,
        );
        t.match(
          s?.message,
          new RegExp(`^The RayJob has passed the activeDeadlineSeconds\\. StartTime: .+\\. ActiveDeadlineSeconds: ${DEADLINE_S}$`),
          `${ns} ${name}: KubeRay's message`,
        );
        endOf[`${ns}/${name}`] = ms(s?.endTime);
        // When it failed (both store whole seconds). KubeRay checks the deadline only when it reconciles, and
        // an Initializing RayJob is reconciled every 3 s (RayJobDefaultRequeueDuration): on the first poll past
        // it. Ours requeues for the deadline itself: at it.
        const failedAfter = ms(s?.endTime) - ms(s?.startTime);
        const latest = ns === 'kuberay' ? DEADLINE_S * 1000 + 3_000 + 1_000 : DEADLINE_S * 1000 + 1_000;
        t.ok(
          failedAfter >= DEADLINE_S * 1000 && failedAfter <= latest,
          `${ns} ${name}: Failed at startTime + ${failedAfter} ms (${ns === 'kuberay' ? 'its next 3 s poll' : 'at the deadline'})`,
        );
      }
    }
    // The RayJob DeleteSelf deleted: its owner UID is the one the left RayCluster points at.
    for (const ns of NAMESPACES_UNDER_TEST) {
      const gone = watched[ns].jobs.find((e) => e.obj.metadata.name === 'delete-self' && e.type === 'DELETED');
      t.ok(gone, `${ns}: the delete-self RayJob was deleted`);
      const left = (await kube.list({ ...RAYCLUSTERS, namespace: ns })).items.find((c) => ownerOf(c)?.name === 'delete-self');
      t.same(
        {
          ...ownerOf(left as RayCluster),
          uid: ownerOf(left as RayCluster)?.uid === gone?.obj.metadata.uid ? '<the deleted RayJob>' : ownerOf(left as RayCluster)?.uid,
        },
        {
          apiVersion: 'ray.io/v1',
          kind: 'RayJob',
          name: 'delete-self',
          uid: '<the deleted RayJob>',
          controller: true,
          blockOwnerDeletion: true,
        },
        `${ns}: delete-self's RayCluster is owned (controller) by the deleted RayJob: the GC's to take`,
      );
    }

    // 3. After the TTL: ttl-10's cluster is gone too; the RayJob stays.
    const ttlName = `ttl-${TTL_S}`;
    const due = Math.max(...NAMESPACES_UNDER_TEST.map((ns) => end(ns, ttlName)));
    await until(
      async () => {
        for (const ns of NAMESPACES_UNDER_TEST) {
          const s = await snapshot(kube, ns);
          if (s.rayClusters.includes(`of ${ttlName}`)) return false;
        }
        return true;
      },
      `${ttlName}'s RayCluster deleted in both`,
      Math.max(0, due + TTL_S * 1000 - Date.now()) + 6_000,
      200,
    );
    await sleep(1_000);
    const afterTtl = {
      rayJobs: ['delete-cluster Failed', 'jobstatus-only Failed', `${ttlName} Failed`],
      rayClusters: ['of delete-self (owner gone)', 'of jobstatus-only'],
    };
    t.same(
      await snapshot(kube, 'kuberay'),
      afterTtl,
      `KubeRay: ${ttlName}'s cluster gone after the TTL, its RayJob kept; #5184's cluster still kept`,
    );
    t.same(await snapshot(kube, 'raykeeper'), await snapshot(kube, 'kuberay'), 'raykeeper: the same after the TTL');

    // When each cluster went, from the watch, relative to its RayJob's endTime (whole seconds in KubeRay's).
    for (const ns of NAMESPACES_UNDER_TEST) {
      const deletedAt = (name: string) =>
        watched[ns].clusters.find((e) => e.type === 'DELETED' && ownerOf(e.obj)?.name === name)?.at ?? Number.NaN;
      const atOnce = deletedAt('delete-cluster') - end(ns, 'delete-cluster');
      t.ok(atOnce >= 0 && atOnce < 4_000, `${ns}: delete-cluster's cluster deleted at once (endTime + ${atOnce} ms)`);
      // KubeRay requeues for endTime + ttl + 2 s (requeueDelayFor's margin), ours for endTime + ttl: for those
      // 2 s the cluster still exists under KubeRay and no longer under ours.
      const afterTtlMs = deletedAt(ttlName) - end(ns, ttlName);
      const [from, to] = ns === 'kuberay' ? [TTL_S * 1000 + 2_000, TTL_S * 1000 + 4_500] : [TTL_S * 1000, TTL_S * 1000 + 2_000];
      t.ok(
        afterTtlMs >= from && afterTtlMs < to,
        `${ns}: ${ttlName}'s cluster deleted after its TTL${ns === 'kuberay' ? ' + 2 s' : ''}, not before (endTime + ${afterTtlMs} ms)`,
      );
      t.notOk(
        watched[ns].clusters.some((e) => e.type === 'DELETED' && ['delete-self', 'jobstatus-only'].includes(ownerOf(e.obj)?.name ?? '')),
        `${ns}: delete-self's and jobstatus-only's clusters never deleted`,
      );
    }

    // The RayJobs' events. Normal: the same reasons and messages on the same RayJobs.
    // Warning: none from KubeRay; ours, by design (src/event-reasons.ts), RayJobFailed on each failure,
    // FailedToStopRayJob where DeleteSelf's stop request found no Ray (KubeRay only logs it), and the
    // #5184 Warning checked below.
    const rayJobEvents = async (ns: Ns, type: string) =>
      (await kube.list({ ...EVENTS, namespace: ns })).items
        .filter((e) => e.involvedObject.kind === 'RayJob' && e.type === type)
        .map((e) => `${e.involvedObject.name} ${e.reason}: ${e.message!.replaceAll(`${ns}/`, '<ns>/').replace(/-[a-z0-9]{5}\b/g, '-<x>')}`)
        .sort();
    await until(
      async () =>
        (await rayJobEvents('kuberay', 'Normal')).length === NAMES.length + 2 &&
        (await rayJobEvents('raykeeper', 'Normal')).length === NAMES.length + 2,
      'the CreatedRayCluster and DeletedRayCluster events of both',
      10_000,
      200,
    );
    const theirNormal = await rayJobEvents('kuberay', 'Normal');
    t.same(
      theirNormal,
      [
        'delete-cluster CreatedRayCluster: Created RayCluster <ns>/delete-cluster-<x>',
        'delete-cluster DeletedRayCluster: Deleted cluster <ns>/delete-cluster-<x>',
        'delete-self CreatedRayCluster: Created RayCluster <ns>/delete-self-<x>',
        'jobstatus-only CreatedRayCluster: Created RayCluster <ns>/jobstatus-only-<x>',
        `${ttlName} CreatedRayCluster: Created RayCluster <ns>/${ttlName}-<x>`,
        `${ttlName} DeletedRayCluster: Deleted cluster <ns>/${ttlName}-<x>`,
      ],
      'KubeRay: CreatedRayCluster on each RayJob, DeletedRayCluster where a rule deleted it',
    );
    t.same(await rayJobEvents('raykeeper', 'Normal'), theirNormal, 'raykeeper: the same Normal events, word for word');
    t.same(await rayJobEvents('kuberay', 'Warning'), [], 'KubeRay: no Warning on any RayJob');
    t.same(
      (await rayJobEvents('raykeeper', 'Warning')).map((e) => e.slice(0, e.indexOf(':'))),
      [
        'delete-cluster RayJobFailed',
        'delete-self FailedToStopRayJob',
        'delete-self RayJobFailed',
        'jobstatus-only DeletionRulesUnmatched',
        'jobstatus-only RayJobFailed',
        `${ttlName} RayJobFailed`,
      ],
      'raykeeper: its own Warnings (RayJobFailed, FailedToStopRayJob, the #5184 one), one of each',
    );

    // 4. Ours only (kuberay #5184): one Warning for the RayJob whose rules cannot match, none for the others.
    const unmatched = async (ns: Ns) =>
      (await kube.list({ ...EVENTS, namespace: ns })).items.filter((e) => e.reason === EVENT_DELETION_RULES_UNMATCHED);
    await until(async () => (await unmatched('raykeeper')).length > 0, 'our DeletionRulesUnmatched Warning', 10_000, 200);
    const warnings = await unmatched('raykeeper');
    t.same(
      warnings.map((e) => ({ type: e.type, on: `${e.involvedObject.kind}/${e.involvedObject.name}`, count: e.count ?? 1 })),
      [{ type: 'Warning', on: 'RayJob/jobstatus-only', count: 1 }],
      'raykeeper: one Warning DeletionRulesUnmatched, on jobstatus-only only, once',
    );
    t.match(
      warnings[0]?.message,
      /^RayCluster raykeeper\/jobstatus-only-[a-z0-9]{5} is kept: none of its 2 deletion rules \(conditions JobStatus SUCCEEDED, JobStatus FAILED\) matches this finished RayJob \(jobDeploymentStatus Failed, jobStatus "", reason DeadlineExceeded\)\. A rule with condition\.jobDeploymentStatus: Failed would match it/,
      'names the kept cluster, the rules that did not match and the one that would',
    );
    const gauge = await metrics.getSingleMetric('raykeeper_rayjob_unmatched_deletion_rules')?.get();
    t.same(
      gauge?.values.map((v) => ({ namespace: v.labels.namespace, value: v.value })),
      [{ namespace: 'raykeeper', value: 1 }],
      'raykeeper_rayjob_unmatched_deletion_rules{namespace="raykeeper"} 1',
    );
    // On KubeRay's CRD an unknown status field is pruned by the API server, so raykeeper keeps its deletion
    // record in an annotation (raykeeper.io/deletion-rules): it survives, and a reconcile caused by any
    // update of the RayJob (here an annotation added by hand, which made the Event's count 2 while the
    // record was a status field) neither repeats the Warning nor a done rule.
    const recordOf = async (name: string) => readDeletionRecord(await kube.get({ ...RAYJOBS, namespace: 'raykeeper', name }));
    t.same(
      [await recordOf('jobstatus-only'), await recordOf('delete-cluster')],
      [
        { done: [], unmatched: true },
        { done: ['DeleteCluster:jobDeploymentStatus=Failed'], unmatched: false },
      ],
      "raykeeper on KubeRay's CRD: the deletion record is kept",
    );
    const rayJobReconciles = async () =>
      ((await metrics.getSingleMetric('raykeeper_controller_reconcile_total')?.get())?.values ?? [])
        .filter((v) => v.labels.controller === 'rayjob')
        .reduce((sum, v) => sum + v.value, 0);
    const before = await rayJobReconciles();
    await kube.patch(
      { ...RAYJOBS, namespace: 'raykeeper', name: 'jobstatus-only' },
      { metadata: { annotations: { 'example.com/touched': 'by-hand' } } },
      MERGE_PATCH,
    );
    await until(async () => (await rayJobReconciles()) > before, "the update's reconcile", 10_000, 100);
    await sleep(500); // its Event, if it sent one, is flushed by now
    t.same(
      (await unmatched('raykeeper')).map((e) => e.count ?? 1),
      [1],
      'an update of the RayJob does not repeat the Warning',
    );

    // KubeRay races itself (its RayJob and RayCluster controllers both write a RayJob's cluster; README's
    // "Beside KubeRay"): a 409 it retries is reported, not asserted; anything else in its log fails.
    const errors = kuberay
      .reconcilerErrors()
      .map((l) => JSON.parse(l) as { logger?: string; error?: string; RayCluster?: { name?: string }; RayJob?: { name?: string } })
      .map((e) => `${e.logger} ${e.RayCluster?.name ?? e.RayJob?.name ?? ''}: ${e.error ?? ''}`);
    const conflict = (e: string) => e.includes('the object has been modified');
    t.same(
      errors.filter((e) => !conflict(e)),
      [],
      'no "Reconciler error" other than a retried 409 conflict in KubeRay\'s log',
    );
    t.comment(`KubeRay's own 409 conflicts: ${errors.filter(conflict).length}`);
    t.comment(`took ${Math.round((Date.now() - started) / 1000)} s`);
  });
