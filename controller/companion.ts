// Companion mode: raykeeper beside KubeRay's operator (README "Beside KubeRay"). The webhook and the
// GCS-FT Redis cleanup come from us; pods and RayJobs from KubeRay, whose own Redis cleanup is then off
// (ENABLE_GCS_FT_REDIS_CLEANUP=false in KubeRay's Deployment).
//
// `--companion=auto|on|off` (the CLI default is auto):
// - auto: at start-up, look for a running KubeRay operator. The signal is KubeRay's leader-election
//   Lease `ray-operator-leader` (main.go: LeaderElectionID), held and renewed within its lease duration,
//   in any namespace. Why the Lease: it says "an operator runs NOW" (a Deployment may be scaled to 0,
//   managedFields only say someone ran once), it is there whatever the Helm release or Deployment is
//   called, and reading it needs only `list leases`. KubeRay's leader election is on by default
//   (--enable-leader-election=true); an operator run without it is not seen: use --companion=on.
// - on / off: the flag decides, nothing is looked up.
// In companion mode the reconcilers that would fight KubeRay do not start (COMPANION_SKIPPED): the
// RayJob state machine (KubeRay's RayJob controller has no off switch; two would both write status and
// race to create the RayCluster), the RayCluster pod reconciler, and the RayCronJob reconciler (KubeRay
// runs RayCronJobs behind its `RayCronJob` feature gate; two schedulers would each create a RayJob a tick,
// under different names, so KubeRay's, if its gate is on, is the only one). A start-up log line and the gauge
// `raykeeper_companion_mode{reason}` say which mode and why. A watcher of KubeRay's own cleanup Jobs
// warns (event + counter) when KubeRay's cleanup was left on, naming the setting to change.
import { MODULE } from './module-names.ts';
import type { Gauge } from 'prom-client';
import { redisCleanupEnabled } from '../src/gcsft/rules.ts';
import type { KubeClient } from '../kube/client.ts';
import {
  ENABLE_GCS_FT_REDIS_CLEANUP_ENV,
  GCS_FT_REDIS_CLEANUP_FINALIZER,
  NODE_TYPE_REDIS_CLEANUP,
  RAY_CLUSTER_LABEL,
  RAY_NODE_TYPE_LABEL,
} from '../src/names.ts';
import type { Logger } from '../kube/logger.ts';
import { sharedCounter, sharedGauge, type Registry } from '../kube/metrics.ts';
import { RAYCLUSTERS } from '../src/types.ts';
import type { Lease } from '../kube/model.ts';
import { splitKey, type ControllerContext, type ReconcilerModule } from '../kube/reconciler.ts';
import { JOBS, LEASES } from '../kube/resources.ts';
import { EVENT_KUBERAY_CLEANUP_ENABLED } from '../src/event-reasons.ts';
import { errorMessage } from '../src/errors.ts';

export type CompanionSetting = 'auto' | 'on' | 'off';
export const COMPANION_SETTINGS: readonly CompanionSetting[] = ['auto', 'on', 'off'];

/** KubeRay's leader-election Lease name (ray-operator main.go, LeaderElectionID). */
export const KUBERAY_LEASE_NAME = 'ray-operator-leader';
/** The label KubeRay puts on every Job it creates (and the only Jobs its cache holds). */
export const KUBERAY_CREATED_BY_SELECTOR = 'app.kubernetes.io/created-by=kuberay-operator';
/** Reconcilers that fight KubeRay's operator: not started in companion mode (by module name). */
export const COMPANION_SKIPPED: readonly string[] = [MODULE.rayJob, MODULE.rayClusterPods, MODULE.rayCronJob];
/** The module that warns when KubeRay's own Redis cleanup is left on. */
export const KUBERAY_CLEANUP_WATCH = 'kuberay-cleanup-watch';
/** What to change, in the words an admin needs (the Warning and README say the same). */
export const KUBERAY_CLEANUP_FIX =
  "set ENABLE_GCS_FT_REDIS_CLEANUP=false in KubeRay's operator (Helm chart kuberay-operator: an `env` entry " +
  '{name: ENABLE_GCS_FT_REDIS_CLEANUP, value: "false"}); raykeeper then cleans Redis alone';

export function parseCompanionSetting(raw: string | undefined): CompanionSetting {
  const value = (raw ?? 'auto').trim().toLowerCase();
  if (!(COMPANION_SETTINGS as readonly string[]).includes(value))
    throw new Error(`--companion must be one of auto, on, off; got ${JSON.stringify(raw)}`);
  return value as CompanionSetting;
}

export type Detection = { found: true; lease: string; holder: string } | { found: false; why: string };

/** A Lease someone holds and renewed within its duration (plus one duration of slack for clock skew). */
export function leaseIsHeld(lease: Lease, now: number): boolean {
  const holder = lease.spec?.holderIdentity ?? '';
  const renewed = Date.parse(lease.spec?.renewTime ?? lease.spec?.acquireTime ?? '');
  const duration = (lease.spec?.leaseDurationSeconds ?? 15) * 1000;
  return holder !== '' && !Number.isNaN(renewed) && now <= renewed + 2 * duration;
}

/** Looks for a running KubeRay operator by its held leader Lease, in every namespace. */
export async function detectKubeRay(kube: KubeClient, now: number, signal?: AbortSignal): Promise<Detection> {
  let leases: Lease[];
  try {
    const list = await kube.list(LEASES, { fieldSelector: `metadata.name=${KUBERAY_LEASE_NAME}`, ...(signal ? { signal } : {}) });
    leases = list.items;
  } catch (err) {
    return {
      found: false,
      why: `cannot list Leases in all namespaces (${errorMessage(err)}); grant list on coordination.k8s.io leases or pass --companion=on|off`,
    };
  }
  const held = leases.find((l) => leaseIsHeld(l, now));
  if (held)
    return { found: true, lease: `${held.metadata.namespace ?? ''}/${held.metadata.name ?? ''}`, holder: held.spec?.holderIdentity ?? '' };
  return {
    found: false,
    why: leases.length > 0 ? `Lease ${KUBERAY_LEASE_NAME} exists but nobody renews it` : `no Lease ${KUBERAY_LEASE_NAME} in any namespace`,
  };
}

export interface CompanionDecision {
  active: boolean;
  /** Metric label: flag-on, flag-off, kuberay-detected, kuberay-not-detected. */
  reason: 'flag-on' | 'flag-off' | 'kuberay-detected' | 'kuberay-not-detected';
  detail: string;
}

/** Pure: the setting and (for auto) what detection saw -> the mode. */
export function companionDecision(setting: CompanionSetting, detection: Detection | undefined): CompanionDecision {
  if (setting === 'on') return { active: true, reason: 'flag-on', detail: '--companion=on' };
  if (setting === 'off') return { active: false, reason: 'flag-off', detail: '--companion=off' };
  if (detection?.found)
    return {
      active: true,
      reason: 'kuberay-detected',
      detail: `KubeRay operator running (Lease ${detection.lease} held by ${detection.holder})`,
    };
  return { active: false, reason: 'kuberay-not-detected', detail: detection && !detection.found ? detection.why : 'not looked up' };
}

function gauge(metrics: Registry): Gauge<'reason'> {
  return sharedGauge(metrics, {
    name: 'raykeeper_companion_mode',
    help: 'Companion mode beside KubeRay (1 = on: the RayJob and RayCluster pod reconcilers are left to KubeRay), by why',
    labelNames: ['reason'],
  });
}

/**
 * Decides the mode and returns the modules to start: in companion mode without COMPANION_SKIPPED, and
 * with the KubeRay cleanup watcher when our RayCluster cleanup runs; records the mode in `ctx.companion`.
 */
export async function companionModules(
  ctx: Pick<ControllerContext, 'kube' | 'logger' | 'metrics' | 'env' | 'now' | 'companion'>,
  modules: ReconcilerModule[],
  setting: CompanionSetting,
): Promise<ReconcilerModule[]> {
  const detection = setting === 'auto' ? await detectKubeRay(ctx.kube, ctx.now()) : undefined;
  const decision = companionDecision(setting, detection);
  ctx.companion = decision.active;
  const g = gauge(ctx.metrics);
  g.reset();
  g.set({ reason: decision.reason }, decision.active ? 1 : 0);
  if (!decision.active) {
    ctx.logger.info({ companion: false, reason: decision.reason, detail: decision.detail }, 'companion mode off: all reconcilers start');
    return modules;
  }
  const skipped = modules.filter((m) => COMPANION_SKIPPED.includes(m.name)).map((m) => m.name);
  const kept = modules.filter((m) => !COMPANION_SKIPPED.includes(m.name));
  const cleaning = kept.some((m) => m.name === MODULE.gcsFtCleanup) && redisCleanupEnabled(ctx.env[ENABLE_GCS_FT_REDIS_CLEANUP_ENV]);
  ctx.logger.info(
    { companion: true, reason: decision.reason, detail: decision.detail, notStarted: skipped, started: kept.map((m) => m.name) },
    `companion mode: ${decision.detail}; not starting ${skipped.join(', ') || 'nothing'} (KubeRay runs them)`,
  );
  return cleaning ? [...kept, kubeRayCleanupWatchModule] : kept;
}

/**
 * Warns when KubeRay's own Redis cleanup is on beside ours: a cleanup Job labelled
 * app.kubernetes.io/created-by=kuberay-operator for a RayCluster that is being deleted with the GCS-FT
 * finalizer (one we are cleaning). One Warning per Job, on the RayCluster.
 */
export const kubeRayCleanupWatchModule: ReconcilerModule = {
  name: KUBERAY_CLEANUP_WATCH,
  summary: "companion mode: Warning when KubeRay's own Redis cleanup Job appears beside ours",
  create(ctx) {
    const jobs = ctx.informers.get({
      ...JOBS,
      labelSelector: `${KUBERAY_CREATED_BY_SELECTOR},${RAY_NODE_TYPE_LABEL}=${NODE_TYPE_REDIS_CLEANUP}`,
    });
    const seen = sharedCounter(ctx.metrics, {
      name: 'raykeeper_kuberay_cleanup_jobs_total',
      help: "Redis cleanup Jobs made by KubeRay's operator for RayClusters raykeeper cleans up (KubeRay's cleanup should be off)",
    });
    const warned = new Set<string>();
    const log: Logger = ctx.logger.child({ controller: KUBERAY_CLEANUP_WATCH });
    return {
      name: KUBERAY_CLEANUP_WATCH,
      workers: 1,
      watches: [{ informer: jobs, filter: (type) => type !== 'delete' }],
      reconciler: {
        async reconcile(key, signal) {
          const job = jobs.get(key);
          const uid = job?.metadata?.uid ?? '';
          if (!job || warned.has(uid)) return;
          const { namespace } = splitKey(key);
          const clusterName = job.metadata?.labels?.[RAY_CLUSTER_LABEL] ?? '';
          if (clusterName === '') return;
          const cluster = await ctx.kube.getOrUndefined({ ...RAYCLUSTERS, namespace, name: clusterName }, { signal });
          if (
            !cluster ||
            !cluster.metadata.deletionTimestamp ||
            !(cluster.metadata.finalizers ?? []).includes(GCS_FT_REDIS_CLEANUP_FINALIZER)
          )
            return;
          warned.add(uid);
          seen.inc();
          const message = `KubeRay's operator created its own Redis cleanup Job ${namespace}/${job.metadata?.name ?? ''} for this RayCluster, which raykeeper cleans up too: both act on the same finalizer. To fix, ${KUBERAY_CLEANUP_FIX}`;
          log.warn({ rayCluster: `${namespace}/${clusterName}`, job: job.metadata?.name }, message);
          ctx.events.event(cluster, 'Warning', EVENT_KUBERAY_CLEANUP_ENABLED, message);
        },
      },
    };
  },
};
