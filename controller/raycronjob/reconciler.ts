// The RayCronJob reconciler: reads the RayCronJob and the RayJobs it owns, runs the pure decision
// (src/raycronjob/decide.ts), carries it out, and writes status.lastScheduleTime through /status only when
// it changed, with the resourceVersion it read. Duplicates are impossible by construction rather than by
// bookkeeping: a tick's RayJob has one name, and a second create of it is AlreadyExists, counted as
// created when the RayJob is ours (kuberay #4849: a stale cache ran one tick twice). Deletions (Replace,
// history limits) are decided only from what the API answered, never from the cache alone: a stale copy
// must not delete a RayJob. A 409 on the status write means "re-read from the API and decide again".
import type { Counter } from 'prom-client';
import { RAY_API_VERSION, RAYCRONJOB_NAME_LABEL } from '../../src/names.ts';
import type { Logger } from '../../kube/logger.ts';
import { sharedCounter, type Registry } from '../../kube/metrics.ts';
import { decideRayCronJob, type RayCronJobDecision } from '../../src/raycronjob/decide.ts';
import { RAYCRONJOBS, RAYJOBS, type RayCronJob, type RayJob } from '../../src/types.ts';
import type { EventRecorder } from '../../kube/events.ts';
import type { Informer } from '../../kube/informer.ts';
import { isAlreadyExists, isConflict, isNotFound, type KubeClient, type ResourceRef } from '../../kube/client.ts';
import { Moved, splitKey, type ObjectKey, type Reconciler, type ReconcileResult } from '../../kube/reconciler.ts';
import {
  EVENT_CREATED_RAYJOB,
  EVENT_DELETED_RAYJOB,
  EVENT_FAILED_TO_CREATE_RAYJOB,
  EVENT_FAILED_TO_DELETE_RAYJOB,
} from '../../src/event-reasons.ts';
import { errorMessage } from '../../src/errors.ts';

/** Decisions in one reconcile before giving the key back to the queue's backoff. */
const MAX_PASSES = 4;

/** The informers the reconciler reads from (the ones its module watches). */
export interface RayCronJobCaches {
  cronJobs: Informer<RayCronJob>;
  /** Every RayJob, or only those labelled ray.io/cronjob-name; children are picked by label and owner. */
  rayJobs: Informer<RayJob>;
}

export interface RayCronJobReconcilerDeps {
  kube: KubeClient;
  events: EventRecorder;
  logger: Logger;
  /** Without caches every read goes to the API (tests that drive the reconciler by hand). */
  caches?: RayCronJobCaches | undefined;
  metrics?: Registry | undefined;
  now?: () => number;
}

function statusChanged(cronJob: RayCronJob, decision: RayCronJobDecision): boolean {
  return (cronJob.status?.lastScheduleTime ?? '') !== (decision.status.lastScheduleTime ?? '');
}

export class RayCronJobReconciler implements Reconciler {
  private readonly kube: KubeClient;
  private readonly events: EventRecorder;
  private readonly log: Logger;
  private readonly caches: RayCronJobCaches | undefined;
  private readonly now: () => number;
  private readonly created: Counter<'outcome'>;
  private readonly deleted: Counter<'reason'>;

  constructor(deps: RayCronJobReconcilerDeps) {
    this.kube = deps.kube;
    this.events = deps.events;
    this.log = deps.logger;
    this.caches = deps.caches;
    this.now = deps.now ?? Date.now;
    this.created = sharedCounter(deps.metrics, {
      name: 'raykeeper_raycronjob_rayjobs_created_total',
      help: 'RayJobs created for RayCronJob ticks; outcome already_exists: the tick had its RayJob (a repeat, harmless)',
      labelNames: ['outcome'],
    });
    this.deleted = sharedCounter(deps.metrics, {
      name: 'raykeeper_raycronjob_rayjobs_deleted_total',
      help: 'RayJobs a RayCronJob deleted: reason Replace (concurrencyPolicy) or history (history limits)',
      labelNames: ['reason'],
    });
  }

  async reconcile(key: ObjectKey, signal?: AbortSignal): Promise<ReconcileResult | void> {
    const { namespace, name } = splitKey(key);
    let why = '';
    for (let pass = 0; pass < MAX_PASSES; pass++) {
      signal?.throwIfAborted();
      const fromCache = pass === 0 && this.caches !== undefined;
      const cronJob = await this.readCronJob(fromCache, namespace, name, signal);
      if (cronJob === null) return;
      const children = await this.readChildren(fromCache, cronJob, signal);
      const decision = decideRayCronJob(cronJob, children, this.now());
      const log = this.log.child({ raycronjob: key, decision: decision.kind });
      if (decision.kind === 'delete' && fromCache) {
        why = 'deletions are decided from the API, not the cache';
        continue;
      }
      try {
        if (decision.kind === 'create') await this.create(cronJob, decision.rayJob, log, signal);
        if (decision.kind === 'delete') await this.deleteChildren(cronJob, decision, log, signal);
        if (statusChanged(cronJob, decision)) await this.writeStatus(cronJob, decision, signal);
      } catch (err) {
        if (!(err instanceof Moved)) throw err;
        why = err.message;
        log.debug({ why }, 're-reading the RayCronJob and deciding again');
        continue;
      }
      for (const ev of decision.events) this.events.event(cronJob, ev.type, ev.reason, ev.message);
      log.debug({ note: decision.note }, 'decided');
      switch (decision.kind) {
        case 'delete':
          why = 'children deleted';
          continue;
        case 'create':
        case 'wait':
          return { requeueAfterMs: decision.requeueAfterMs };
        case 'nothing':
          return {};
      }
    }
    // A delete decided from the cache is confirmed on the next pass; only a loop of them ends here.
    throw new Error(`RayCronJob ${key} kept changing while being reconciled (${why}); retrying with backoff`);
  }

  private async readCronJob(
    fromCache: boolean,
    namespace: string | undefined,
    name: string,
    signal?: AbortSignal,
  ): Promise<RayCronJob | null> {
    const cached = fromCache ? this.caches?.cronJobs.getByName(namespace, name) : undefined;
    if (cached !== undefined) return cached;
    return (await this.kube.getOrUndefined({ ...RAYCRONJOBS, namespace, name }, { signal })) ?? null;
  }

  /** The RayJobs labelled with this RayCronJob's name (the decision keeps those it controls). */
  private async readChildren(fromCache: boolean, cronJob: RayCronJob, signal?: AbortSignal): Promise<RayJob[]> {
    const name = cronJob.metadata.name ?? '';
    const namespace = cronJob.metadata.namespace;
    if (fromCache && this.caches) {
      return this.caches.rayJobs.list(namespace).filter((j) => j.metadata.labels?.[RAYCRONJOB_NAME_LABEL] === name);
    }
    const list = await this.kube.list({ ...RAYJOBS, namespace }, { labelSelector: `${RAYCRONJOB_NAME_LABEL}=${name}`, signal });
    return list.items;
  }

  private async create(cronJob: RayCronJob, rayJob: RayJob, log: Logger, signal?: AbortSignal): Promise<void> {
    const namespace = cronJob.metadata.namespace;
    const name = rayJob.metadata.name ?? '';
    try {
      await this.kube.create({ ...RAYJOBS, namespace }, rayJob, { signal });
    } catch (err) {
      if (!isAlreadyExists(err)) {
        this.events.event(
          cronJob,
          'Warning',
          EVENT_FAILED_TO_CREATE_RAYJOB,
          `Failed to create RayJob ${namespace}/${name}: ${errorMessage(err)}`,
        );
        throw err;
      }
      const existing = await this.kube.getOrUndefined({ ...RAYJOBS, namespace, name }, { signal });
      if (existing === undefined) throw new Moved(`RayJob ${name} existed, then did not`);
      if (!(existing.metadata.ownerReferences ?? []).some((o) => o.controller === true && o.uid === cronJob.metadata.uid)) {
        const message = `RayJob ${namespace}/${name} exists and is not owned by RayCronJob ${namespace}/${cronJob.metadata.name}; rename or delete it`;
        this.events.event(cronJob, 'Warning', EVENT_FAILED_TO_CREATE_RAYJOB, message);
        throw new Error(message);
      }
      this.created.inc({ outcome: 'already_exists' });
      log.info({ rayjob: name }, 'the RayJob of this tick already exists: counted as created');
      return;
    }
    this.created.inc({ outcome: 'created' });
    this.events.event(cronJob, 'Normal', EVENT_CREATED_RAYJOB, `Created RayJob ${namespace}/${name}`);
    log.info({ rayjob: name }, 'created the RayJob of a tick');
  }

  private async deleteChildren(
    cronJob: RayCronJob,
    decision: Extract<RayCronJobDecision, { kind: 'delete' }>,
    log: Logger,
    signal?: AbortSignal,
  ): Promise<void> {
    const namespace = cronJob.metadata.namespace;
    for (const child of decision.children) {
      const ref: ResourceRef = { ...RAYJOBS, namespace, name: child.name };
      try {
        // The uid precondition: never a newer RayJob of the same name.
        const deleted = await this.kube.delete(ref, { propagationPolicy: 'Background', preconditions: { uid: child.uid }, signal });
        if (!deleted) continue;
      } catch (err) {
        if (isConflict(err)) continue;
        this.events.event(
          cronJob,
          'Warning',
          EVENT_FAILED_TO_DELETE_RAYJOB,
          `Failed to delete RayJob ${namespace}/${child.name}: ${errorMessage(err)}`,
        );
        throw err;
      }
      this.deleted.inc({ reason: decision.why });
      const why = decision.why === 'Replace' ? 'concurrencyPolicy Replace' : 'history limit';
      this.events.event(cronJob, 'Normal', EVENT_DELETED_RAYJOB, `Deleted RayJob ${namespace}/${child.name} (${why})`);
      log.info({ rayjob: child.name, why }, 'deleted a RayJob');
    }
  }

  private async writeStatus(cronJob: RayCronJob, decision: RayCronJobDecision, signal?: AbortSignal): Promise<void> {
    const body = {
      apiVersion: cronJob.apiVersion ?? RAY_API_VERSION,
      kind: cronJob.kind ?? 'RayCronJob',
      metadata: cronJob.metadata,
      spec: cronJob.spec,
      status: decision.status,
    };
    const ref: ResourceRef = {
      ...RAYCRONJOBS,
      namespace: cronJob.metadata.namespace,
      name: cronJob.metadata.name ?? '',
      subresource: 'status',
    };
    try {
      await this.kube.replace(ref, body, { signal });
    } catch (err) {
      if (isConflict(err)) throw new Moved('status write conflicted');
      if (isNotFound(err)) return;
      throw err;
    }
  }
}
