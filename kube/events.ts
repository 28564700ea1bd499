// Kubernetes Events (core/v1, what `kubectl describe` and `kubectl get events` show) for things an
// admin must see. Repeats of the same (object, type, reason, message) within `dedupWindowMs` bump
// `count` / `lastTimestamp` on the existing Event instead of creating a new one. Recording is
// best effort and never throws: every event is also logged, because an Event cannot be written in a
// namespace that is being deleted (the API server refuses new objects there). A replica that no longer
// leads records nothing (its client's write fence, kube/client.ts `fenced`).
import { randomBytes } from 'node:crypto';
import { isNotFound, MERGE_PATCH, type KubeClient } from './client.ts';
import type { ObjectWithMeta } from './model.ts';
import type { Logger } from './logger.ts';
import { EVENTS } from './resources.ts';

export type EventType = 'Normal' | 'Warning';

export interface EventRecorder {
  /** Records an event about `obj` (fire and forget). */
  event(obj: ObjectWithMeta, type: EventType, reason: string, message: string): void;
  /** Waits for pending writes (tests, shutdown). */
  flush(): Promise<void>;
}

interface Seen {
  name: string;
  namespace: string;
  count: number;
  at: number;
}

const MAX_MESSAGE = 1024;

export class KubeEventRecorder implements EventRecorder {
  private readonly kube: KubeClient;
  private readonly component: string;
  private readonly instance: string;
  private readonly logger: Logger | undefined;
  private readonly dedupWindowMs: number;
  private readonly now: () => number;
  private readonly seen = new Map<string, Seen>();
  private readonly pending = new Set<Promise<void>>();
  /** Counts by type/reason and write failures, read by the metrics collector. */
  readonly counts = new Map<string, number>();
  writeFailures = 0;

  constructor(options: {
    kube: KubeClient;
    component: string;
    instance: string;
    logger?: Logger | undefined;
    dedupWindowMs?: number;
    now?: () => number;
  }) {
    this.kube = options.kube;
    this.component = options.component;
    this.instance = options.instance;
    this.logger = options.logger;
    this.dedupWindowMs = options.dedupWindowMs ?? 10 * 60_000;
    this.now = options.now ?? Date.now;
  }

  event(obj: ObjectWithMeta, type: EventType, reason: string, message: string): void {
    const meta = obj.metadata ?? {};
    const ref = `${obj.kind ?? '?'} ${meta.namespace ?? ''}/${meta.name ?? ''}`;
    const log = { event: { type, reason }, object: ref };
    if (!this.kube.mayWrite({ namespace: meta.namespace, resource: 'events' })) {
      // Leadership ended (the client's write fence): what a stale leader saw is not for admins.
      this.logger?.debug(log, `event ${reason} dropped: no longer leading`);
      return;
    }
    if (type === 'Warning') this.logger?.warn(log, `event ${reason}: ${message}`);
    else this.logger?.info(log, `event ${reason}: ${message}`);
    const countKey = `${type}/${reason}`;
    this.counts.set(countKey, (this.counts.get(countKey) ?? 0) + 1);
    if (!meta.namespace || !meta.name) return;
    const p = this.write(obj, type, reason, message.length > MAX_MESSAGE ? message.slice(0, MAX_MESSAGE - 3) + '...' : message).catch(
      (err: unknown) => {
        this.writeFailures += 1;
        this.logger?.warn({ err: String(err), object: ref, reason }, 'could not record event');
      },
    );
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  async flush(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  private async write(obj: ObjectWithMeta, type: EventType, reason: string, message: string): Promise<void> {
    const meta = obj.metadata ?? {};
    const namespace = meta.namespace as string;
    const dedupKey = `${meta.uid ?? `${namespace}/${meta.name}`}|${type}|${reason}|${message}`;
    const now = this.now();
    const ts = new Date(now).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const prior = this.seen.get(dedupKey);
    if (prior && now - prior.at < this.dedupWindowMs) {
      prior.count += 1;
      prior.at = now;
      try {
        await this.kube.patch(
          { ...EVENTS, namespace: prior.namespace, name: prior.name },
          { count: prior.count, lastTimestamp: ts },
          MERGE_PATCH,
        );
        return;
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    const name = `${meta.name}.${randomBytes(8).toString('hex')}`;
    await this.kube.create(
      { ...EVENTS, namespace },
      {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          name: meta.name,
          namespace,
          uid: meta.uid,
          resourceVersion: meta.resourceVersion,
        },
        type,
        reason,
        message,
        count: 1,
        firstTimestamp: ts,
        lastTimestamp: ts,
        source: { component: this.component },
        reportingComponent: this.component,
        reportingInstance: this.instance,
      },
    );
    this.seen.set(dedupKey, { name, namespace, count: 1, at: now });
    if (this.seen.size > 4096) {
      const oldest = this.seen.keys().next();
      if (!oldest.done) this.seen.delete(oldest.value);
    }
  }
}
