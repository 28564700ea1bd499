// THE TEST JOB RUNNER: it stands in for the kubelet and the job controller, which the local control
// plane does not have (a lone kube-apiserver stores Jobs but nothing runs them).
//
// It watches batch/v1 Jobs (all namespaces or the given ones). For each Job without status.startTime it
// claims the Job by writing startTime (+ active: 1) through /status, guarded by the resourceVersion it
// read, then runs the pod template's first container `command` + `args` as a LOCAL PROCESS with the
// container's env resolved as the kubelet would (value with $(VAR) expansion, secretKeyRef and
// configMapKeyRef read through the API, envFrom, simple fieldRefs). The command's first word is mapped
// through a table (default: `raykeeper` -> this repository's bin/raykeeper.js under the running Node);
// other commands are found on PATH. It retries failed attempts up to spec.backoffLimit, kills the
// process at spec.activeDeadlineSeconds, and writes the outcome through /status the way a 1.35 job
// controller does: SuccessCriteriaMet then Complete (+ completionTime, succeeded), or FailureTarget then
// Failed (reason BackoffLimitExceeded or DeadlineExceeded; failed count). Process output goes to the
// runner's log (pino) and is kept per Job (see output()). A benchmark can run a command as a function in
// this process instead (`inProcess`), without a process start-up.
//
// Built on the controller runtime's informer and work queue (kube/): the Jobs are cached by
// one informer per namespace (or one for all), and a Job's key is handled by one worker at a time from
// its cached state (level-triggered, like a reconciler): failures are retried with per-key backoff, and
// what must happen later (an orphan's deadline, a half-finished Job) is a delayed add of the key.
//
// Idempotent across restarts: a Job whose startTime is set is never run again (by this or another
// runner); if it was left unfinished by a runner that stopped, only its activeDeadlineSeconds ends it.
// A failed attempt is followed by the next one after the job controller's pod failure backoff (10 s,
// doubled after each failure, at most 6 min; tests pass a shorter base): a stand-in that retried at once
// gave a submitter a hundredth of the time a real cluster gives it to meet a head that is still starting.
// Not modelled: parallelism/completions > 1, indexed Jobs, podFailurePolicy, successPolicy, pod
// objects (no Pod is created), ttlSecondsAfterFinished.
import { randomBytes, randomUUID } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { sleep } from '../kube/backoff.ts';
import { type Informer, InformerFactory } from '../kube/informer.ts';
import type { BatchJob, ObjectWithMeta } from '../kube/model.ts';
import { runWorkers, WorkQueue } from '../kube/queue.ts';
import { objectKey, type ObjectKey, splitKey } from '../kube/reconciler.ts';
import { isConflict, isNotFound, KubeClient, MERGE_PATCH } from '../kube/client.ts';
import { CONFIGMAPS, JOBS, SECRETS, type Resource } from '../kube/resources.ts';
import { createLogger, type Logger } from '../kube/logger.ts';
import { REPO_ROOT } from './binaries.ts';
import {
  backoffLimit,
  BACKOFF_LIMIT_EXCEEDED,
  type CommandTable,
  DEADLINE_EXCEEDED,
  deadlineAt,
  decideJobRun,
  finishStatuses,
  type RunnerJob,
  localCommand,
  localPod,
  type JobRunOutcome,
  retryDelay,
  retryStatus,
  startStatus,
  suspendedStatus,
} from './job-logic.ts';
import { EnvResolutionError, type EnvLookups, resolveEnv } from '../kube/env.ts';
import { spawnSupervised, type Supervised } from './process.ts';
import { errorMessage } from '../src/errors.ts';

/**
 * A container command run as a function in this process (see JobRunnerOptions.inProcess): `args` are the
 * words after the command's first one, $(VAR)-expanded; resolves with the exit code.
 */
export type InProcessCommand = (
  args: string[],
  io: { env: Record<string, string>; stdout: { write(s: string): unknown }; stderr: { write(s: string): unknown }; signal: AbortSignal },
) => Promise<number>;

export interface JobRunnerOptions {
  kubeConfig: KubeConfig;
  /** Watch only these namespaces (default: all). Tests sharing a control plane should pass theirs. */
  namespaces?: string[];
  /** Only Jobs matching this label selector. */
  labelSelector?: string;
  /** First word of a container command -> local argv prefix. Merged over DEFAULT_COMMANDS. */
  commands?: CommandTable;
  /**
   * The environment the container env is layered on (default: PATH, HOME, LANG, TMPDIR, NO_PROXY of
   * this process: a pod does not inherit the kubelet's environment either).
   */
  baseEnv?: Record<string, string>;
  /** Working directory when the container's workingDir does not exist locally (default: process.cwd()). */
  cwd?: string;
  logger?: Logger;
  /** Pause after the first failed attempt, doubled after each further one, at most 6 min (the job controller's). Default 10000. */
  retryDelayMs?: number;
  /** Pause between tries to resolve env whose Secret/ConfigMap is missing (the kubelet retries too). Default 1000. */
  envRetryMs?: number;
  /** SIGTERM -> SIGKILL grace when a process must be stopped. Default 3000. */
  killGraceMs?: number;
  /** Every cached Job is decided again this often (a guard against anything missed). Default 30000. */
  resyncMs?: number;
  /** Job keys handled at once (claims and status writes; the runs themselves go on in the background). Default 4. */
  workers?: number;
  /** Jobs run at once; more wait unclaimed (no startTime) until one ends. Default: no limit. */
  maxRunning?: number;
  /** First word of a container command (exact, or its basename) -> a function run in this process instead. */
  inProcess?: Record<string, InProcessCommand>;
  /**
   * A Job showing only the interim condition (SuccessCriteriaMet / FailureTarget) is finished by this
   * runner if it still does after this long (its runner stopped between the two writes). Default 5000.
   */
  finalizeAfterMs?: number;
  /** Bytes of output kept per Job. Default 65536. */
  outputLimit?: number;
}

export interface JobRunResult {
  namespace: string;
  name: string;
  uid: string;
  outcome: JobRunOutcome;
  /** Exit code of the last attempt (null if killed by a signal or never started). */
  exitCode: number | null;
  attempts: number;
  output: string;
}

/** `raykeeper` runs this repository's CLI under the Node running us (the pinned Node 22). */
export const DEFAULT_COMMANDS: CommandTable = {
  raykeeper: [process.execPath, join(REPO_ROOT, 'bin', 'raykeeper.js')],
};

const BASE_ENV_KEYS = ['PATH', 'HOME', 'LANG', 'TMPDIR', 'NO_PROXY', 'no_proxy'];

/** The default base environment: PATH, HOME, LANG, TMPDIR, NO_PROXY of this process. */
export function defaultBaseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of BASE_ENV_KEYS) if (process.env[k] !== undefined) env[k] = process.env[k]!;
  return env;
}

interface Running {
  uid: string;
  proc?: Supervised;
  /** Aborted when the run must stop: cuts waits short, tells in-process commands. */
  abort: AbortController;
  /** Why we are stopping it (set before killing). */
  stopReason?: 'deadline' | 'deleted' | 'suspended' | 'shutdown';
  deadlineTimer?: NodeJS.Timeout;
  done: Promise<void>;
}

export class JobRunner extends EventEmitter {
  private readonly options: JobRunnerOptions;
  private readonly kube: KubeClient;
  private readonly factory: InformerFactory;
  /** namespace ('' for all) -> the informer caching its Jobs. */
  private readonly informers = new Map<string, Informer<BatchJob>>();
  private readonly queue = new WorkQueue({ retry: { baseMs: 200, maxMs: 10_000, factor: 2, jitter: 0.2 } });
  private readonly log: Logger;
  private readonly commands: CommandTable;
  private readonly running = new Map<ObjectKey, Running>();
  /** Keys of Jobs to start once fewer than `maxRunning` run. */
  private readonly waiting = new Set<ObjectKey>();
  /** Since when a Job has shown only an interim condition (key -> uid and ms epoch). */
  private readonly interimSince = new Map<ObjectKey, { uid: string; since: number }>();
  /** Orphans (by uid) already reported. */
  private readonly orphansSeen = new Set<string>();
  private readonly outputs = new Map<ObjectKey, string>();
  private readonly results = new Map<ObjectKey, JobRunResult>();
  /** key -> the resourceVersion of the Job as last handled (see waitForHandled). */
  private readonly handled = new Map<ObjectKey, string>();
  /** Jobs (by uid) this runner ran or finished: later (stale) events about them are ignored. */
  private readonly doneUids = new Set<string>();
  private workers: Promise<void> = Promise.resolve();
  private resyncTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private started = false;

  constructor(options: JobRunnerOptions) {
    super();
    this.options = options;
    // fieldManager: stands in for the kubelet and the job controller, so its writes are not recorded as raykeeper's
    this.kube = new KubeClient(options.kubeConfig, { timeoutMs: 60_000, fieldManager: 'raykeeper-job-runner' });
    this.factory = new InformerFactory(this.kube);
    for (const namespace of options.namespaces?.length ? options.namespaces : ['']) {
      const informer = this.factory.get({ ...JOBS, namespace, labelSelector: options.labelSelector });
      informer.on((_type, job) => this.queue.add(objectKey(job)));
      this.informers.set(namespace, informer);
    }
    this.log = options.logger ?? createLogger('job-runner');
    for (const informer of this.informers.values())
      informer.onError((err) => this.log.warn({ err: String(err) }, 'job watch failed; retrying with backoff'));
    this.commands = { ...DEFAULT_COMMANDS, ...(options.commands ?? {}) };
  }

  /** Lists the Jobs and starts watching and handling them. Resolves once every Job listed is queued. */
  async start(): Promise<void> {
    if (this.started) throw new Error('JobRunner already started');
    this.started = true;
    this.factory.start();
    await this.factory.waitForSync();
    this.workers = runWorkers(
      this.queue,
      this.options.workers ?? 4,
      (key) => this.handle(key),
      (key, err, retryInMs) => this.log.warn({ err, job: key, retryInMs }, 'job runner failed to handle a job; retrying'),
    );
    this.resyncTimer = setInterval(() => {
      for (const informer of this.informers.values()) for (const key of informer.keys()) this.queue.add(key);
    }, this.options.resyncMs ?? 30_000);
    this.resyncTimer.unref();
    this.log.info({ namespaces: this.options.namespaces ?? 'all' }, 'job runner started');
  }

  /** Stops watching and kills the processes it runs (their Jobs keep startTime: they are not rerun). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.resyncTimer);
    this.queue.shutdown();
    await this.workers;
    await this.factory.stop();
    const runs = [...this.running.values()];
    for (const r of runs) this.stopRun(r, 'shutdown');
    await Promise.allSettled(runs.map((r) => r.done));
    this.kube.close();
    this.log.info('job runner stopped');
  }

  /** Output captured so far for a Job (stdout and stderr interleaved; last `outputLimit` bytes). */
  output(namespace: string, name: string): string {
    return this.outputs.get(`${namespace}/${name}`) ?? '';
  }

  /** The result of a Job this runner ran to the end, if any. */
  result(namespace: string, name: string): JobRunResult | undefined {
    return this.results.get(`${namespace}/${name}`);
  }

  /** Resolves with the Job's result once this runner finished it (rejects after timeoutMs). */
  waitFor(namespace: string, name: string, timeoutMs = 60_000): Promise<JobRunResult> {
    const key = `${namespace}/${name}`;
    return this.until(
      'finished',
      (r: JobRunResult) => (`${r.namespace}/${r.name}` === key ? r : undefined),
      this.results.get(key),
      timeoutMs,
      () => `job ${key} did not finish within ${timeoutMs} ms; output so far:\n${this.output(namespace, name)}`,
    );
  }

  /**
   * Resolves once this runner has handled the Job as stored at `resourceVersion` (e.g. the version its
   * own last status write made): every earlier event about it has been dealt with by then.
   */
  async waitForHandled(namespace: string, name: string, resourceVersion: string, timeoutMs = 10_000): Promise<void> {
    const key = `${namespace}/${name}`;
    const match = (h: { key: string; resourceVersion: string }) =>
      h.key === key && h.resourceVersion === resourceVersion ? true : undefined;
    await this.until(
      'handled',
      match,
      this.handled.get(key) === resourceVersion || undefined,
      timeoutMs,
      () => `job ${key} at resourceVersion ${resourceVersion} not handled within ${timeoutMs} ms (last: ${this.handled.get(key)})`,
    );
  }

  private until<E, T>(
    event: string,
    match: (e: E) => T | undefined,
    already: T | undefined,
    timeoutMs: number,
    failure: () => string,
  ): Promise<T> {
    if (already !== undefined) return Promise.resolve(already);
    return new Promise((resolve, reject) => {
      const listener = (e: E): void => {
        const found = match(e);
        if (found === undefined) return;
        clearTimeout(timer);
        this.off(event, listener);
        resolve(found);
      };
      const timer = setTimeout(() => {
        this.off(event, listener);
        reject(new Error(failure()));
      }, timeoutMs);
      this.on(event, listener);
    });
  }

  private cached(key: ObjectKey): RunnerJob | undefined {
    const { namespace = '' } = splitKey(key);
    return (this.informers.get(namespace) ?? this.informers.get(''))?.get(key) as RunnerJob | undefined;
  }

  // ---- decisions ----

  /** Brings one Job (by key, from the cache) along: level-triggered, one call per key at a time. */
  private async handle(key: ObjectKey): Promise<void> {
    const job = this.cached(key);
    const run = this.running.get(key);
    if (run && run.uid !== job?.metadata.uid) this.stopRun(run, 'deleted'); // gone, or replaced by a new RunnerJob
    if (!job) {
      this.waiting.delete(key);
      this.interimSince.delete(key);
      this.handled.delete(key);
      return;
    }
    await this.act(key, job, run !== undefined && run.uid === job.metadata.uid);
    if (job.metadata.resourceVersion) {
      this.handled.set(key, job.metadata.resourceVersion);
      this.emit('handled', { key, resourceVersion: job.metadata.resourceVersion });
    }
  }

  private async act(key: ObjectKey, job: RunnerJob, runningHere: boolean): Promise<void> {
    if (this.stopped || (job.metadata.uid && this.doneUids.has(job.metadata.uid))) return;
    const decision = decideJobRun(job, runningHere);
    if (decision.kind !== 'finalize') this.interimSince.delete(key);
    if (decision.kind !== 'start') this.waiting.delete(key);
    switch (decision.kind) {
      case 'finished':
      case 'running':
        return;
      case 'deleting':
        if (runningHere) this.stopRun(this.running.get(key)!, 'deleted');
        return;
      case 'suspended':
        if (runningHere) this.stopRun(this.running.get(key)!, 'suspended');
        else if (decision.markSuspended)
          await this.writeStatus(job, (fresh) => (fresh.spec.suspend ? suspendedStatus(fresh, new Date()) : null));
        return;
      case 'finalize':
        await this.finalizeIfStuck(key, job, decision.outcome);
        return;
      case 'orphaned':
        await this.failOrphanAtDeadline(key, job, decision.deadlineAt);
        return;
      case 'start':
        if (this.running.size >= (this.options.maxRunning ?? Infinity)) this.waiting.add(key);
        else await this.claimAndRun(key, job);
        return;
    }
  }

  /**
   * Interim condition without the final one: either the runner that runs it is between its two writes
   * (leave it alone) or a runner stopped there. Finish it only if it stays so for `finalizeAfterMs`.
   */
  private async finalizeIfStuck(key: ObjectKey, job: RunnerJob, outcome: JobRunOutcome): Promise<void> {
    const uid = job.metadata.uid ?? '';
    const now = Date.now();
    const seen = this.interimSince.get(key);
    if (!seen || seen.uid !== uid) this.interimSince.set(key, { uid, since: now });
    const waitMs = (seen?.uid === uid ? seen.since : now) + (this.options.finalizeAfterMs ?? 5000) - now;
    if (waitMs > 0) {
      this.queue.addAfter(key, waitMs);
      return;
    }
    this.interimSince.delete(key);
    const counts = { succeeded: job.status?.succeeded ?? 0, failed: job.status?.failed ?? 0 };
    if (await this.finish(job, outcome, counts, (fresh) => decideJobRun(fresh, false).kind === 'finalize'))
      this.record(job, outcome, null, 0);
  }

  /** A started Job we do not run: never rerun it; fail it at its deadline like the job controller would. */
  private async failOrphanAtDeadline(key: ObjectKey, job: RunnerJob, at: number | undefined): Promise<void> {
    const uid = job.metadata.uid ?? '';
    if (!this.orphansSeen.has(uid)) {
      this.orphansSeen.add(uid);
      this.log.warn({ job: key, startTime: job.status?.startTime }, 'job already started by an earlier runner; not running it again');
    }
    if (at === undefined) return;
    if (at > Date.now()) {
      this.queue.addAfter(key, at - Date.now());
      return;
    }
    const counts = { succeeded: 0, failed: (job.status?.failed ?? 0) + (job.status?.active ? 1 : 0) };
    if (await this.finish(job, DEADLINE_EXCEEDED, counts)) this.record(job, DEADLINE_EXCEEDED, null, 0);
  }

  // ---- status writes ----

  /**
   * Computes a status patch from the Job (null: nothing to write) and writes it through /status guarded
   * by that copy's resourceVersion. The first try uses the copy given (the cache's, or what the last
   * write returned); on 409 Conflict it re-reads and retries. Resolves with the stored Job, or undefined
   * when nothing was written (or the Job is gone or was replaced by a new one).
   */
  private async writeStatus(job: RunnerJob, compute: (fresh: RunnerJob) => Record<string, unknown> | null): Promise<RunnerJob | undefined> {
    const ref = { ...JOBS, namespace: job.metadata.namespace, name: job.metadata.name };
    let fresh: RunnerJob | undefined = job.metadata.resourceVersion ? job : undefined;
    for (let attempt = 0; attempt < 10; attempt++) {
      fresh ??= (await this.kube.getOrUndefined(ref)) as RunnerJob | undefined; // the API server's Job has what RunnerJob requires
      if (!fresh || (job.metadata.uid && fresh.metadata.uid !== job.metadata.uid)) return undefined;
      const status = compute(fresh);
      if (status === null) return undefined;
      try {
        return (await this.kube.patch(
          { ...ref, subresource: 'status' },
          { metadata: { resourceVersion: fresh.metadata.resourceVersion }, status },
          MERGE_PATCH,
        )) as RunnerJob;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        if (!isConflict(err)) throw err;
        fresh = undefined;
      }
    }
    throw new Error(`too many conflicts writing the status of job ${job.metadata.namespace}/${job.metadata.name}`);
  }

  /**
   * Writes the two final status updates; false when there was nothing to finish (already finished,
   * being deleted, gone, or `still(fresh)` says the Job changed meanwhile).
   */
  private async finish(
    job: RunnerJob,
    outcome: JobRunOutcome,
    counts: { succeeded: number; failed: number },
    still: (fresh: RunnerJob) => boolean = () => true,
  ): Promise<boolean> {
    const now = new Date();
    let second: Record<string, unknown> | undefined;
    const first = await this.writeStatus(job, (fresh) => {
      const d = decideJobRun(fresh, true);
      if (d.kind === 'finished' || d.kind === 'deleting' || !still(fresh)) return null;
      const [a, b] = finishStatuses(fresh, outcome, counts, now);
      second = b;
      return a;
    });
    if (!first || !second) return false;
    await this.writeStatus(first, (fresh) =>
      decideJobRun(fresh, true).kind === 'finished' ? null : finishStatuses(fresh, outcome, counts, now)[1],
    );
    this.log.info({ job: objectKey(job), outcome, ...counts }, 'job finished');
    return true;
  }

  private record(job: RunnerJob, outcome: JobRunOutcome, exitCode: number | null, attempts: number): void {
    if (job.metadata.uid) this.doneUids.add(job.metadata.uid);
    const result: JobRunResult = {
      namespace: job.metadata.namespace,
      name: job.metadata.name,
      uid: job.metadata.uid ?? '',
      outcome,
      exitCode,
      attempts,
      output: this.output(job.metadata.namespace, job.metadata.name),
    };
    this.results.set(objectKey(job), result);
    this.emit('finished', result);
  }

  // ---- running ----

  private async claimAndRun(key: ObjectKey, job: RunnerJob): Promise<void> {
    const claimed = await this.writeStatus(job, (fresh) =>
      decideJobRun(fresh, false).kind === 'start' ? startStatus(fresh, new Date()) : null,
    );
    if (!claimed) return; // someone else started it, or it changed: its next event decides
    this.waiting.delete(key);
    const run: Running = { uid: claimed.metadata.uid ?? '', abort: new AbortController(), done: Promise.resolve() };
    this.running.set(key, run);
    this.outputs.set(key, '');
    const at = deadlineAt(claimed);
    if (at !== undefined) {
      run.deadlineTimer = setTimeout(() => this.stopRun(run, 'deadline'), Math.max(0, at - Date.now()));
      run.deadlineTimer.unref();
    }
    run.done = this.runAttempts(claimed, run)
      .catch((err) => this.log.error({ err, job: key }, 'job runner crashed while running a job'))
      .finally(() => {
        if (run.deadlineTimer) clearTimeout(run.deadlineTimer);
        // Stale events about it (e.g. our own startTime write) must not make it look orphaned.
        if (run.stopReason !== 'shutdown' && run.stopReason !== 'suspended') this.doneUids.add(run.uid);
        if (this.running.get(key) === run) this.running.delete(key);
        // A slot is free: the Jobs waiting for one are decided again.
        for (const waiting of this.waiting) this.queue.add(waiting);
        // Suspended: the Job is decided again (resumed meanwhile? then it starts over).
        if (run.stopReason === 'suspended') this.queue.add(key);
      });
  }

  private stopRun(run: Running, reason: NonNullable<Running['stopReason']>): void {
    if (run.stopReason) return;
    run.stopReason = reason;
    run.abort.abort();
    void run.proc?.stop(this.options.killGraceMs ?? 3000);
  }

  private append(key: ObjectKey, text: string): void {
    const limit = this.options.outputLimit ?? 65_536;
    const next = (this.outputs.get(key) ?? '') + text;
    this.outputs.set(key, next.length > limit ? next.slice(next.length - limit) : next);
  }

  private lookups(): EnvLookups {
    const read = <K extends ObjectWithMeta>(resource: Resource<K>, namespace: string, name: string) =>
      this.kube.getOrUndefined({ ...resource, namespace, name });
    const decode = (m: Record<string, string> | undefined): Record<string, string> =>
      Object.fromEntries(Object.entries(m ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
    return {
      secret: async (ns, name) => {
        const s = await read(SECRETS, ns, name);
        return s && decode(s.data);
      },
      configMap: async (ns, name) => {
        const c = await read(CONFIGMAPS, ns, name);
        return c && { ...decode(c.binaryData), ...(c.data ?? {}) };
      },
    };
  }

  private baseEnv(): Record<string, string> {
    return this.options.baseEnv ?? defaultBaseEnv();
  }

  /** Runs attempts until success, the backoff limit, the deadline, or a stop; then writes the outcome. */
  private async runAttempts(job: RunnerJob, run: Running): Promise<void> {
    const key = objectKey(job);
    const container = job.spec.template.spec.containers[0];
    let failed = job.status?.failed ?? 0;
    let attempts = 0;
    let exitCode: number | null = null;
    let outcome: JobRunOutcome | undefined;
    while (outcome === undefined && !run.stopReason) {
      attempts++;
      const pod = localPod(job, randomBytes(3).toString('hex').slice(0, 5), randomUUID());
      let env: Record<string, string> | undefined;
      try {
        if (!container) throw new Error('the pod template has no container');
        // Like the kubelet, wait for missing Secrets/ConfigMaps (only the deadline or a stop ends that).
        while (env === undefined && !run.stopReason) {
          try {
            env = await resolveEnv(container, pod, this.lookups());
          } catch (err) {
            if (!(err instanceof EnvResolutionError)) throw err;
            this.append(key, `job runner: CreateContainerConfigError: ${err.message}\n`);
            this.log.warn({ job: key, reason: err.message }, 'cannot resolve the container env yet');
            await sleep(this.options.envRetryMs ?? 1000, run.abort.signal);
          }
        }
      } catch (err) {
        // The container cannot start at all (no command, unsupported env source): a failed pod.
        env = undefined;
        this.append(key, `job runner: cannot start the container: ${errorMessage(err)}\n`);
        this.log.error({ job: key, err }, 'cannot start the job container');
      }
      if (run.stopReason) break;
      if (env) {
        exitCode = await this.runContainer(key, run, container!, { ...this.baseEnv(), ...env });
        if (run.stopReason) break;
        if (exitCode === 0) {
          outcome = { kind: 'succeeded' };
          break;
        }
      }
      failed++;
      if (failed > backoffLimit(job)) {
        outcome = BACKOFF_LIMIT_EXCEEDED;
        break;
      }
      await this.writeStatus(job, (fresh) => (decideJobRun(fresh, true).kind === 'running' ? retryStatus(failed) : null));
      await sleep(retryDelay(failed, this.options.retryDelayMs), run.abort.signal);
    }
    if (run.stopReason === 'deadline') outcome = DEADLINE_EXCEEDED;
    if (run.stopReason === 'deadline' && exitCode !== 0) failed++; // the killed pod counts as failed
    if (run.stopReason === 'suspended') {
      await this.writeStatus(job, (fresh) => (fresh.spec.suspend ? suspendedStatus(fresh, new Date()) : null));
      return;
    }
    if (outcome === undefined) return; // deleted or shut down: nothing to write
    await this.finish(job, outcome, { succeeded: outcome.kind === 'succeeded' ? 1 : 0, failed });
    this.record(job, outcome, exitCode, attempts);
  }

  /** One attempt: the container's command in this process (`inProcess`) or as a local process. */
  private async runContainer(
    key: ObjectKey,
    run: Running,
    container: RunnerJob['spec']['template']['spec']['containers'][number],
    env: Record<string, string>,
  ): Promise<number | null> {
    let command: { file: string; args: string[] };
    try {
      const words = localCommand(container, {}, env);
      const inProcess = this.options.inProcess?.[words.file] ?? this.options.inProcess?.[words.file.split('/').pop()!];
      if (inProcess) {
        const sink = { write: (s: string) => (this.append(key, s), true) };
        return await inProcess(words.args, { env, stdout: sink, stderr: sink, signal: run.abort.signal });
      }
      command = localCommand(container, this.commands, env);
    } catch (err) {
      // No command, or an in-process command that threw: a failed container.
      this.append(key, `job runner: cannot start the container: ${errorMessage(err)}\n`);
      this.log.error({ job: key, err }, 'cannot start the job container');
      return null;
    }
    return this.spawnAttempt(key, run, command, env, container.workingDir);
  }

  private async spawnAttempt(
    key: ObjectKey,
    run: Running,
    command: { file: string; args: string[] },
    env: Record<string, string>,
    workingDir: string | undefined,
  ): Promise<number | null> {
    const cwd = workingDir && existsSync(workingDir) ? workingDir : (this.options.cwd ?? process.cwd());
    this.log.info({ job: key, command: command.file, args: command.args.length }, 'running job container locally');
    let proc: Supervised;
    try {
      proc = await spawnSupervised(command.file, command.args, { env, cwd, group: true, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      // Like an image whose entrypoint does not exist: the container fails (exit code 127 in a shell).
      this.append(key, `job runner: ${errorMessage(err)}\n`);
      return 127;
    }
    run.proc = proc;
    const { namespace, name } = splitKey(key);
    this.emit('started', { namespace, name, pid: proc.pid });
    // The output is complete once both pipes closed, which can be a moment after the exit.
    const closed = once(proc.child, 'close');
    for (const [stream, streamName] of [
      [proc.child.stdout, 'stdout'],
      [proc.child.stderr, 'stderr'],
    ] as const) {
      let partial = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        this.append(key, chunk);
        const lines = (partial + chunk).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) this.log.info({ job: key, stream: streamName }, line);
      });
      stream?.on('end', () => partial && this.log.info({ job: key, stream: streamName }, partial));
    }
    if (run.stopReason) void proc.stop(this.options.killGraceMs ?? 3000);
    const { code, signal } = await proc.exited;
    // The process group is killed on exit; a pipe held open elsewhere must not hold the Job up.
    await Promise.race([closed, sleep(1000)]);
    this.log.info({ job: key, code, signal }, 'job container exited');
    return code ?? (signal ? null : 1);
  }
}

/** Starts a JobRunner (convenience for `raykeeper dev` and tests). */
export async function startJobRunner(options: JobRunnerOptions): Promise<JobRunner> {
  const runner = new JobRunner(options);
  await runner.start();
  return runner;
}
