// Registers the RayCronJob reconciler with the controller runtime (one line in controller/reconcilers.ts).
// Triggers: RayCronJobs themselves, and the RayJobs they own (mapped to the owner: a child finishing
// lets a Forbid tick run, or the history limits delete an old one). Between events, each reconcile asks
// to come back just after the next tick.
import { MODULE } from '../module-names.ts';
import { ownerKeys, runsModule, type ControllerContext, type ReconcilerModule } from '../../kube/reconciler.ts';
import type { Informer } from '../../kube/informer.ts';
import { RAYCRONJOB_NAME_LABEL } from '../../src/names.ts';
import { RAYCRONJOBS, RAYJOBS, type RayJob } from '../../src/types.ts';
import { RayCronJobReconciler } from './reconciler.ts';

/** The RayJobs RayCronJobs own: the rayjob module's cache of all RayJobs when it runs, else only labelled ones. */
export function cronJobChildrenInformer(ctx: ControllerContext): Informer<RayJob> {
  // When the RayJob state machine runs here, its cache of every RayJob is shared.
  const shared = runsModule(ctx, MODULE.rayJob);
  return ctx.informers.get(shared ? { ...RAYJOBS } : { ...RAYJOBS, labelSelector: RAYCRONJOB_NAME_LABEL });
}

export const rayCronJobModule: ReconcilerModule = {
  name: MODULE.rayCronJob,
  summary: 'RayCronJob: one RayJob a schedule tick (KubeRay v1.7 names, timeZone; CronJob concurrencyPolicy, deadlines, history limits)',
  create(ctx) {
    const cronJobs = ctx.informers.get({ ...RAYCRONJOBS });
    const rayJobs = cronJobChildrenInformer(ctx);
    const reconciler = new RayCronJobReconciler({
      kube: ctx.kube,
      events: ctx.events,
      logger: ctx.logger.child({ controller: 'raycronjob' }),
      metrics: ctx.metrics,
      now: ctx.now,
      caches: { cronJobs, rayJobs },
    });
    return {
      name: MODULE.rayCronJob,
      reconciler,
      watches: [{ informer: cronJobs }, { informer: rayJobs, toKeys: ownerKeys('RayCronJob', 'ray.io'), resync: false }],
    };
  },
};
