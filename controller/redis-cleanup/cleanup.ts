// Deleting one Ray GCS storage namespace from Redis: SCAN (never KEYS), TYPE checks, pipelined UNLINK
// batches; the old single-hash layout checked field by field with HSCAN. Memory stays bounded by one SCAN
// batch whatever the size of the keyspace. Connection failures restart the (idempotent) pass after an
// exponential backoff, all within one total deadline; auth, permission and TLS failures end it at once.
import type { Redis } from 'ioredis';
import {
  classifyCurrentKey,
  classifyLegacyType,
  currentPattern,
  displayKey,
  firstForeignField,
  legacyKey,
} from '../../src/redis/keys.ts';
import { batchKeys } from '../../src/redis/slots.ts';
import type { BackoffPolicy } from '../../src/redis/errors.ts';
import { storageNamespaceProblem } from '../../src/gcsft.ts';
import { RedisCleanupError, type RedisConnectionOptions, type Session } from './connect.ts';
import { DeadlineExceeded, scan, withRetries } from './retry.ts';

/** Fits under the cleanup Job's activeDeadlineSeconds (300) with room for pod start-up. */
export const DEFAULT_DEADLINE_MS = 240_000;
export const DEFAULT_SCAN_COUNT = 1000;
export const DEFAULT_UNLINK_BATCH = 500;
const HSCAN_COUNT = 200;
/** Reports list at most this many keys by name; counts stay exact. */
const REPORT_LIMIT = 1000;

export type Layout = 'both' | 'current' | 'legacy';

export interface CleanupOptions {
  connection: RedisConnectionOptions;
  namespace: string;
  dryRun?: boolean | undefined;
  layout?: Layout | undefined;
  scanCount?: number | undefined;
  unlinkBatch?: number | undefined;
  /** Total time for everything, retries included. */
  deadlineMs?: number | undefined;
  backoff?: BackoffPolicy | undefined;
  /** Called after every SCAN batch (awaited). */
  onProgress?: ((p: Progress) => void | Promise<void>) | undefined;
  /** Called before sleeping for a retry. */
  onRetry?: ((info: { attempt: number; delayMs: number; reason: string }) => void) | undefined;
}

export interface Progress {
  node: string;
  scanCalls: number;
  matched: number;
  deleted: number;
  elapsedMs: number;
}

export interface KeyReport {
  key: string;
  type: string;
  reason?: string | undefined;
}

export interface CleanupResult {
  namespace: string;
  target: string;
  mode: Session['mode'];
  dryRun: boolean;
  /** Current-layout keys deleted (or that would be, with dryRun). */
  deleted: KeyReport[];
  deletedCount: number;
  /** The old layout's hash `<ns>`. */
  legacy: 'absent' | 'deleted' | 'would-delete' | 'left-alone' | 'not-checked';
  legacyFields?: number | undefined;
  /** Keys that share the namespace's names but are not Ray's: never touched. */
  leftAlone: KeyReport[];
  leftAloneCount: number;
  scanCalls: number;
  attempts: number;
  durationMs: number;
  warnings: string[];
}

/** The pipeline's replies, throwing the first error (ioredis reports per-command errors in place). */
async function exec(client: Redis, commands: (string | Buffer)[][]): Promise<unknown[]> {
  if (commands.length === 0) return [];
  const results = (await client.pipeline(commands).exec()) ?? [];
  return results.map(([err, value]) => {
    if (err) throw err;
    return value;
  });
}

interface PassState {
  deleted: Map<string, KeyReport>;
  deletedCount: number;
  leftAlone: Map<string, KeyReport>;
  leftAloneCount: number;
  scanCalls: number;
  matched: number;
  legacy: CleanupResult['legacy'];
  legacyFields?: number | undefined;
  /** Set once the old-layout hash was unlinked, so a later retried pass that finds it absent reports it. */
  legacyDeleted?: { fields: number } | undefined;
}

function remember(map: Map<string, KeyReport>, report: KeyReport): void {
  if (map.size < REPORT_LIMIT || map.has(report.key)) map.set(report.key, report);
}

export async function runCleanup(options: CleanupOptions): Promise<CleanupResult> {
  const started = Date.now();
  const ns = options.namespace;
  const problem = storageNamespaceProblem(ns);
  if (problem) throw new RedisCleanupError(problem, 'fatal');
  const deadline = started + (options.deadlineMs ?? DEFAULT_DEADLINE_MS);
  const layout = options.layout ?? 'both';
  const dryRun = options.dryRun ?? false;
  const cfg: PassConfig = {
    dryRun,
    scanCount: options.scanCount ?? DEFAULT_SCAN_COUNT,
    unlinkBatch: options.unlinkBatch ?? DEFAULT_UNLINK_BATCH,
    deadline,
    started,
  };
  const state: PassState = { deleted: new Map(), deletedCount: 0, leftAlone: new Map(), leftAloneCount: 0, scanCalls: 0, matched: 0, legacy: 'not-checked' };
  const { value: session, attempts } = await withRetries(
    { connection: options.connection, deadline, backoff: options.backoff, onRetry: options.onRetry },
    async (s) => {
      // A retried pass starts over from cursor 0: SCAN cursors are not valid across servers or restarts.
      // Deleted keys stay counted (they are gone); look-alikes, and a dry run's finds, are found again.
      if (dryRun) {
        state.deleted.clear();
        state.deletedCount = 0;
      }
      state.leftAlone.clear();
      state.leftAloneCount = 0;
      state.legacy = 'not-checked';
      state.legacyFields = undefined;
      // The old layout first: one TYPE, so a key out of the ACL's reach fails before anything is deleted.
      if (layout !== 'current') await legacyPass(s, ns, dryRun, deadline, state);
      if (layout !== 'legacy') await currentPass(s, ns, cfg, state, options.onProgress);
      return { describe: s.describe, mode: s.mode, warnings: s.warnings };
    },
  );
  if (state.legacy === 'absent' && state.legacyDeleted) {
    state.legacy = 'deleted';
    state.legacyFields = state.legacyDeleted.fields;
  }
  const result: CleanupResult = {
    namespace: ns,
    target: session.describe,
    mode: session.mode,
    dryRun,
    deleted: [...state.deleted.values()],
    deletedCount: state.deletedCount,
    legacy: state.legacy,
    leftAlone: [...state.leftAlone.values()],
    leftAloneCount: state.leftAloneCount,
    scanCalls: state.scanCalls,
    attempts,
    durationMs: Date.now() - started,
    warnings: session.warnings,
  };
  if (state.legacyFields !== undefined) result.legacyFields = state.legacyFields;
  return result;
}

interface PassConfig {
  dryRun: boolean;
  scanCount: number;
  unlinkBatch: number;
  deadline: number;
  started: number;
}

async function currentPass(session: Session, ns: string, cfg: PassConfig, state: PassState, onProgress: CleanupOptions['onProgress']): Promise<void> {
  const pattern = currentPattern(ns);
  for (const node of session.nodes) {
    let cursor = '0';
    do {
      if (Date.now() >= cfg.deadline) throw new DeadlineExceeded(`deadline reached while scanning ${node.label} after ${state.scanCalls} SCAN calls`);
      const [next, keys] = await scan(node.client, cursor, 'MATCH', pattern, 'COUNT', String(cfg.scanCount));
      cursor = next.toString();
      state.scanCalls += 1;
      if (keys.length > 0) {
        state.matched += keys.length;
        const types = (await exec(node.client, keys.map((k) => ['type', k]))) as string[];
        const ray: Buffer[] = [];
        keys.forEach((key, i) => {
          const type = String(types[i]);
          const verdict = classifyCurrentKey(key, type, ns);
          if (verdict.ray) {
            ray.push(key);
            remember(state.deleted, { key: displayKey(key), type });
          } else if (type !== 'none') {
            state.leftAloneCount += 1;
            remember(state.leftAlone, { key: displayKey(key), type, reason: verdict.reason });
          }
        });
        if (ray.length > 0) {
          if (cfg.dryRun) state.deletedCount += ray.length;
          else {
            const batches = batchKeys(ray, cfg.unlinkBatch, session.clustered);
            const counts = await exec(node.client, batches.map((b) => ['unlink', ...b]));
            state.deletedCount += counts.reduce<number>((sum, n) => sum + Number(n), 0);
          }
        }
      }
      await onProgress?.({ node: node.label, scanCalls: state.scanCalls, matched: state.matched, deleted: state.deletedCount, elapsedMs: Date.now() - cfg.started });
    } while (cursor !== '0');
  }
}

async function legacyPass(session: Session, ns: string, dryRun: boolean, deadline: number, state: PassState): Promise<void> {
  const key = legacyKey(ns);
  const router = session.router;
  const type = String(await router.type(key));
  const first = classifyLegacyType(type);
  if ('absent' in first) {
    state.legacy = 'absent';
    return;
  }
  if ('ray' in first) {
    state.legacy = 'left-alone';
    state.leftAloneCount += 1;
    remember(state.leftAlone, { key: displayKey(key), type, reason: first.reason });
    return;
  }
  // A hash named like the namespace: Ray's only if every field is `<ns>@...`.
  let cursor = '0';
  let fields = 0;
  do {
    if (Date.now() >= deadline) throw new DeadlineExceeded(`deadline reached while checking the hash ${displayKey(key)}`);
    const [next, flat] = (await router.callBuffer('HSCAN', key, cursor, 'COUNT', String(HSCAN_COUNT))) as [Buffer, Buffer[]];
    cursor = next.toString();
    const names = flat.filter((_, i) => i % 2 === 0);
    fields += names.length;
    const foreign = firstForeignField(names, ns);
    if (foreign !== undefined) {
      state.legacy = 'left-alone';
      state.leftAloneCount += 1;
      remember(state.leftAlone, { key: displayKey(key), type, reason: `has field ${JSON.stringify(displayKey(foreign, 80))} not starting with ${JSON.stringify(`${ns}@`)}` });
      return;
    }
  } while (cursor !== '0');
  state.legacyFields = fields;
  if (dryRun) {
    state.legacy = 'would-delete';
    return;
  }
  await router.unlink(key);
  state.legacy = 'deleted';
  state.legacyDeleted = { fields };
}

/** One line for humans; the CLI prints it on success. */
export function summarize(r: CleanupResult): string {
  const verb = r.dryRun ? 'would delete' : 'deleted';
  const legacy =
    r.legacy === 'absent' ? 'no old-layout hash'
    : r.legacy === 'not-checked' ? 'old layout not checked'
    : r.legacy === 'left-alone' ? 'old-layout hash left alone (not Ray\'s)'
    : `old-layout hash ${r.legacy === 'deleted' ? 'deleted' : 'would be deleted'} (${r.legacyFields ?? 0} fields)`;
  const alone = r.leftAloneCount > 0 ? `; left alone ${r.leftAloneCount} look-alike key(s)` : '';
  const retries = r.attempts > 1 ? `; ${r.attempts - 1} retr${r.attempts === 2 ? 'y' : 'ies'}` : '';
  return `namespace ${JSON.stringify(r.namespace)} on ${r.target}: ${verb} ${r.deletedCount} key(s); ${legacy}${alone}${retries}; ${r.scanCalls} SCAN calls in ${r.durationMs} ms`;
}

