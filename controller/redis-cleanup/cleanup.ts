// Deleting one Ray GCS storage namespace from Redis. One pass, in this order:
//   1. read-only checks of every command the deletions need, on keys of both layouts (SCAN on every node
//      when the sweep runs, TYPE, HSCAN of an old-layout hash): a user the ACL denies any of them fails
//      here, with nothing deleted (UNLINK itself is denied before it deletes anything);
//   2. UNLINK of the tables Ray is known to write (`RAY<ns>@<TABLE>`, src/redis/keys.ts RAY_TABLES),
//      each TYPE-checked: the namespace's data is gone after one round trip;
//   3. UNLINK of the old layout's hash `<ns>` when every field is `<ns>@...`;
//   4. with `sweep: always` (the default), a SCAN MATCH `RAY<ns>@*` sweep (never KEYS) for whatever else
//      is there (tables newer than the list), TYPE-checked, pipelined UNLINK batches. It walks the whole
//      keyspace (~0.6 s of Redis CPU per million keys) and is the cost of the cleanup; `never` skips it,
//      which is complete for a Ray up to the release RAY_TABLES was read from (src/redis/sweep.ts: the
//      controller decides from the RayCluster).
// The sweep shares the server with live clusters' GCS, so it is paced in server time: every SCAN, and
// every pipeline of TYPEs or UNLINKs, carries as much work as fits the command budget (default 5 ms),
// adapted per node from the server time each reply measured (src/redis/pace.ts, meter.ts).
// Steps 1-3 send fixed, tiny work (18 known keys, HSCAN COUNT 200, single-key UNLINKs of lazily freed
// values): microseconds, not paced.
// Memory stays bounded by one SCAN batch whatever the size of the keyspace. Connection failures restart
// the (idempotent) pass after an exponential backoff, all within one total deadline and, while Redis
// cannot be reached at all, a connection budget; auth, permission and TLS failures end it at once.
import type { Redis } from 'ioredis';
import {
  classifyCurrentKey,
  classifyLegacyType,
  CLUSTER_METADATA_FIELD,
  currentPattern,
  currentPrefix,
  displayKey,
  firstForeignField,
  knownKeys,
  legacyKey,
  metadataRayVersion,
} from '../../src/redis/keys.ts';
import { classifyRedisError } from '../../src/redis/errors.ts';
import { batchKeys } from '../../src/redis/slots.ts';
import { BATCH_PACE, DEFAULT_COMMAND_BUDGET_MS, Pace, SCAN_PACE } from '../../src/redis/pace.ts';
import { pacedPipelines, ServerClock, type Measure } from './meter.ts';
import type { BackoffOptions } from '../../kube/backoff.ts';
import { storageNamespaceProblem } from '../../src/gcsft/rules.ts';
import { autoSweep, type SweepDecision } from '../../src/redis/sweep.ts';
import { RedisCleanupError, type RedisConnectionOptions, type Session } from './connect.ts';
import { DeadlineExceeded, scan, withRetries } from './retry.ts';

/** Fits under the cleanup Job's activeDeadlineSeconds (300) with room for pod start-up. */
export const DEFAULT_DEADLINE_MS = 240_000;
export const DEFAULT_UNLINK_BATCH = 500;
const HSCAN_COUNT = 200;
const DEFAULT_SWEEP: SweepDecision = { mode: 'always', reason: 'always, the default' };
/** Reports list at most this many keys by name; counts stay exact. */
const REPORT_LIMIT = 1000;

export type Layout = 'both' | 'current' | 'legacy';

export interface CleanupOptions {
  connection: RedisConnectionOptions;
  namespace: string;
  dryRun?: boolean | undefined;
  layout?: Layout | undefined;
  /** Step 4, and why; default: always. */
  sweep?: SweepDecision | undefined;
  /** A fixed SCAN COUNT; default: adapted to the command budget. */
  scanCount?: number | undefined;
  /** Most keys in one UNLINK command (a pipeline's total is paced to the budget). */
  unlinkBatch?: number | undefined;
  /** Bound on the server time of each SCAN and each pipeline of the sweep, ms; default 5. */
  commandBudgetMs?: number | undefined;
  /** Total time for everything, retries included. */
  deadlineMs?: number | undefined;
  /** How long Redis may stay unreachable (no connection at all) before giving up; default 60 s. */
  connectBudgetMs?: number | undefined;
  backoff?: BackoffOptions | undefined;
  /** Aborts between steps and during retry waits (the controller's in-process cleanup). */
  signal?: AbortSignal | undefined;
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

export interface PaceReport {
  budgetMs: number;
  /** How server time was measured (per node; 'mixed' when nodes differed). */
  measure: Measure | 'mixed';
  /** The longest server time measured for one SCAN or one pipeline, ms. */
  longestMs: number;
  /** The COUNT of the last SCAN call: where the pace settled. */
  scanCount: number;
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
  /** Whether the SCAN sweep (step 4) ran, and why. */
  sweep: 'ran' | 'skipped';
  sweepReason: string;
  /** Of deletedCount: keys removed by name (Ray's known tables) before the SCAN sweep. */
  knownDeleted: number;
  /** ms from the start until the known tables were unlinked (the namespace's data gone). */
  dataGoneMs?: number | undefined;
  /** How the sweep kept to the command budget (when it ran). */
  pace?: PaceReport | undefined;
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
  knownDeleted: number;
  dataGoneMs?: number | undefined;
  /** Known-table keys this pass already reported (look-alikes; a dry run's finds): the sweep skips them. */
  handled: Set<string>;
  legacy: CleanupResult['legacy'];
  legacyFields?: number | undefined;
  /** Set once the old-layout hash was unlinked, so a later retried pass that finds it absent reports it. */
  legacyDeleted?: { fields: number } | undefined;
  pace?: PaceReport | undefined;
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
  const given: SweepDecision = layout === 'legacy' ? { mode: 'never', reason: '--layout legacy' } : (options.sweep ?? DEFAULT_SWEEP);
  let sweep = given;
  const cfg: PassConfig = {
    dryRun,
    scanCount: options.scanCount,
    unlinkBatch: options.unlinkBatch ?? DEFAULT_UNLINK_BATCH,
    budgetMs: options.commandBudgetMs ?? DEFAULT_COMMAND_BUDGET_MS,
    deadline,
    started,
    signal: options.signal,
  };
  const state: PassState = {
    deleted: new Map(),
    deletedCount: 0,
    leftAlone: new Map(),
    leftAloneCount: 0,
    scanCalls: 0,
    matched: 0,
    knownDeleted: 0,
    handled: new Set(),
    legacy: 'not-checked',
  };
  const { value: session, attempts } = await withRetries(
    {
      connection: options.connection,
      deadline,
      connectBudgetMs: options.connectBudgetMs,
      backoff: options.backoff,
      onRetry: options.onRetry,
      signal: options.signal,
    },
    async (s) => {
      // A retried pass starts over from cursor 0: SCAN cursors are not valid across servers or restarts.
      // Deleted keys stay counted (they are gone); look-alikes, and a dry run's finds, are found again.
      if (dryRun) {
        state.deleted.clear();
        state.deletedCount = 0;
        state.knownDeleted = 0;
      }
      state.handled.clear();
      state.leftAlone.clear();
      state.leftAloneCount = 0;
      state.legacy = 'not-checked';
      state.legacyFields = undefined;
      // 1. Everything read-only first: a command or key out of the ACL's reach fails before any deletion.
      if (given.mode === 'always' && given.fromData) sweep = await sweepFromData(s, ns, given);
      if (sweep.mode === 'always') await probeScan(s, ns);
      const known = layout !== 'legacy' ? await checkKnown(s, ns, state) : [];
      const legacy = layout !== 'current' ? await checkLegacy(s, ns, deadline, state) : undefined;
      check(cfg);
      // 2. The data: Ray's known tables in one round trip, then the old layout's hash.
      if (known.length > 0) await unlinkKnown(s, known, cfg, state);
      state.dataGoneMs ??= Date.now() - started;
      if (legacy) await unlinkLegacy(s, ns, legacy, dryRun, state);
      // 3. The sweep, for anything not on the list.
      if (sweep.mode === 'always') await currentPass(s, ns, cfg, state, options.onProgress);
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
    sweep: sweep.mode === 'always' ? 'ran' : 'skipped',
    sweepReason: sweep.reason,
    knownDeleted: state.knownDeleted,
    dataGoneMs: state.dataGoneMs,
    pace: state.pace,
    attempts,
    durationMs: Date.now() - started,
    warnings: session.warnings,
  };
  if (state.legacyFields !== undefined) result.legacyFields = state.legacyFields;
  return result;
}

interface PassConfig {
  dryRun: boolean;
  /** Fixed COUNT, or undefined: adaptive. */
  scanCount: number | undefined;
  unlinkBatch: number;
  budgetMs: number;
  deadline: number;
  started: number;
  signal: AbortSignal | undefined;
}

/** Stops at the deadline or when aborted (between steps; a deletion under way finishes). */
function check(cfg: PassConfig, where = ''): void {
  if (cfg.signal?.aborted) throw new RedisCleanupError(`aborted${where}`, 'fatal', { cause: cfg.signal.reason });
  if (Date.now() >= cfg.deadline) throw new DeadlineExceeded(`deadline reached${where}`);
}

/** Commands for keys anywhere: one pipeline on a single server; per key (routed by slot) on a cluster. */
async function routed(session: Session, commands: (string | Buffer)[][]): Promise<unknown[]> {
  if (!session.clustered) return exec(session.router as Redis, commands);
  return Promise.all(commands.map(([name, ...args]) => session.router.callBuffer(String(name), ...args)));
}

/**
 * The sweep decision from the namespace's own data when no version was given: the version its head
 * recorded (CLUSTER_METADATA_FIELD, rewritten at every head start, read before the KV table goes).
 * Unreadable (no +hget, not a hash) or absent: the sweep runs, and the reason says why.
 */
async function sweepFromData(session: Session, ns: string, given: SweepDecision): Promise<SweepDecision> {
  const kv = Buffer.concat([currentPrefix(ns), Buffer.from('KV')]);
  let value: Buffer | null;
  try {
    value = await session.router.hgetBuffer(kv, CLUSTER_METADATA_FIELD);
  } catch (err) {
    if (classifyRedisError(err) === 'retryable') throw err;
    return {
      mode: 'always',
      reason: `${given.reason}; the recorded version could not be read (${String((err as Error).message).split(/\s/, 1)[0]})`,
    };
  }
  const version = metadataRayVersion(value);
  if (version === undefined) return { mode: 'always', reason: `${given.reason}; no version recorded in ${displayKey(kv)}` };
  const fromData = autoSweep([{ from: `recorded in ${displayKey(kv)}`, version }]);
  return { mode: fromData.mode, reason: fromData.reason };
}

/** SCAN needs its own ACL permission: one call with COUNT 1 per node proves it before anything goes. */
async function probeScan(session: Session, ns: string): Promise<void> {
  const pattern = currentPattern(ns);
  for (const node of session.nodes) await scan(node.client, '0', 'MATCH', pattern, 'COUNT', '1');
}

/** TYPE of every known table key: the ones that are Ray's (hash, or the JobCounter string). */
async function checkKnown(session: Session, ns: string, state: PassState): Promise<{ key: Buffer; type: string }[]> {
  const keys = knownKeys(ns);
  const types = await routed(
    session,
    keys.map((k) => ['type', k]),
  );
  const ray: { key: Buffer; type: string }[] = [];
  keys.forEach((key, i) => {
    const type = String(types[i]);
    const verdict = classifyCurrentKey(key, type, ns);
    if (verdict.ray) ray.push({ key, type });
    else if (type !== 'none') {
      state.leftAloneCount += 1;
      remember(state.leftAlone, { key: displayKey(key), type, reason: verdict.reason });
      state.handled.add(key.toString('latin1'));
    }
  });
  return ray;
}

async function unlinkKnown(session: Session, known: { key: Buffer; type: string }[], cfg: PassConfig, state: PassState): Promise<void> {
  for (const k of known) remember(state.deleted, { key: displayKey(k.key), type: k.type });
  if (cfg.dryRun) {
    state.deletedCount += known.length;
    state.knownDeleted += known.length;
    for (const k of known) state.handled.add(k.key.toString('latin1'));
    return;
  }
  const counts = await routed(
    session,
    batchKeys(
      known.map((k) => k.key),
      cfg.unlinkBatch,
      session.clustered,
    ).map((b) => ['unlink', ...b]),
  );
  const n = counts.reduce<number>((sum, c) => sum + Number(c), 0);
  state.deletedCount += n;
  state.knownDeleted += n;
}

async function currentPass(
  session: Session,
  ns: string,
  cfg: PassConfig,
  state: PassState,
  onProgress: CleanupOptions['onProgress'],
): Promise<void> {
  const pattern = currentPattern(ns);
  for (const node of session.nodes) {
    const clock = await ServerClock.start(node.client);
    const scanPace = new Pace(cfg.budgetMs, SCAN_PACE, cfg.scanCount);
    const typePace = new Pace(cfg.budgetMs, BATCH_PACE);
    const unlinkPace = new Pace(cfg.budgetMs, BATCH_PACE);
    let cursor = '0';
    do {
      check(cfg, ` while scanning ${node.label} after ${state.scanCalls} SCAN calls`);
      const count = scanPace.size;
      const { replies, serverMs } = await clock.run([['SCAN', cursor, 'MATCH', pattern, 'COUNT', String(count)]], ['scan'], true);
      scanPace.observe(serverMs);
      const [next, found = []] = replies[0] as [Buffer, Buffer[] | undefined];
      const keys = state.handled.size === 0 ? found : found.filter((k) => !state.handled.has(k.toString('latin1')));
      cursor = next.toString();
      state.scanCalls += 1;
      if (keys.length > 0) {
        state.matched += keys.length;
        const types = await pacedPipelines(
          clock,
          typePace,
          keys,
          (chunk) => chunk.map((k) => ['type', k]),
          'type',
          () => check(cfg),
        );
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
            const counts = await pacedPipelines(
              clock,
              unlinkPace,
              ray,
              (chunk) => batchKeys(chunk, cfg.unlinkBatch, session.clustered).map((b) => ['unlink', ...b]),
              'unlink',
            );
            state.deletedCount += counts.reduce<number>((sum, n) => sum + Number(n), 0);
          }
        }
      }
      state.pace = {
        budgetMs: cfg.budgetMs,
        measure: state.pace && state.pace.measure !== clock.measure ? 'mixed' : clock.measure,
        longestMs: Math.max(state.pace?.longestMs ?? 0, scanPace.longestMs, typePace.longestMs, unlinkPace.longestMs),
        scanCount: count,
      };
      await onProgress?.({
        node: node.label,
        scanCalls: state.scanCalls,
        matched: state.matched,
        deleted: state.deletedCount,
        elapsedMs: Date.now() - cfg.started,
      });
    } while (cursor !== '0');
  }
}

/** The old layout's hash `<ns>`: Ray's when every field is `<ns>@...` (read-only; see unlinkLegacy). */
async function checkLegacy(session: Session, ns: string, deadline: number, state: PassState): Promise<{ fields: number } | undefined> {
  const key = legacyKey(ns);
  const router = session.router;
  const type = String(await router.type(key));
  const first = classifyLegacyType(type);
  if ('absent' in first) {
    state.legacy = 'absent';
    return undefined;
  }
  if ('ray' in first) {
    state.legacy = 'left-alone';
    state.leftAloneCount += 1;
    remember(state.leftAlone, { key: displayKey(key), type, reason: first.reason });
    return undefined;
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
      remember(state.leftAlone, {
        key: displayKey(key),
        type,
        reason: `has field ${JSON.stringify(displayKey(foreign, 80))} not starting with ${JSON.stringify(`${ns}@`)}`,
      });
      return undefined;
    }
  } while (cursor !== '0');
  state.legacyFields = fields;
  return { fields };
}

async function unlinkLegacy(session: Session, ns: string, legacy: { fields: number }, dryRun: boolean, state: PassState): Promise<void> {
  if (dryRun) {
    state.legacy = 'would-delete';
    return;
  }
  await session.router.unlink(legacyKey(ns));
  state.legacy = 'deleted';
  state.legacyDeleted = legacy;
}

/**
 * One line for a person (the CLI prints it; Events quote it): what was deleted, from where. How the
 * cleanup went about it (the sweep decision, SCAN calls, the old layout's absence) is cleanupDetail's.
 */
export function summarize(r: CleanupResult): string {
  const parts = [`${r.dryRun ? 'would delete' : 'deleted'} ${r.deletedCount} key(s)`];
  if (r.legacy === 'deleted' || r.legacy === 'would-delete')
    parts.push(`old-layout hash ${r.legacy === 'deleted' ? 'deleted' : 'would be deleted'} (${r.legacyFields ?? 0} fields)`);
  if (r.legacy === 'left-alone') parts.push("old-layout hash left alone (not Ray's)");
  if (r.leftAloneCount > 0) parts.push(`left alone ${r.leftAloneCount} look-alike key(s)`);
  if (r.attempts > 1) parts.push(`${r.attempts - 1} retr${r.attempts === 2 ? 'y' : 'ies'}`);
  return `namespace ${JSON.stringify(r.namespace)} on ${r.target}: ${parts.join('; ')} in ${r.durationMs} ms`;
}

/** The internal detail of a cleanup, as structured-log fields (and the CLI's --verbose line). */
export function cleanupDetail(r: CleanupResult): {
  sweep: CleanupResult['sweep'];
  sweepReason: string;
  scanCalls: number;
  legacy: CleanupResult['legacy'];
  pace?: PaceReport | undefined;
} {
  const detail = { sweep: r.sweep, sweepReason: r.sweepReason, scanCalls: r.scanCalls, legacy: r.legacy };
  return r.pace ? { ...detail, pace: r.pace } : detail;
}
