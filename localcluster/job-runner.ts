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
// runner's log (pino) and is kept per Job (see output()).
//
// Idempotent across restarts: a Job whose startTime is set is never run again (by this or another
// runner); if it was left unfinished by a runner that stopped, only its activeDeadlineSeconds ends it.
// Not modelled: parallelism/completions > 1, indexed Jobs, podFailurePolicy, successPolicy, pod
// objects (no Pod is created), ttlSecondsAfterFinished, the exponential 10 s pod backoff (retryDelayMs).
import { randomBytes, randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type KubeConfig, Watch } from '@kubernetes/client-node';
import { createLogger, type Logger } from '../src/logger.ts';
import { REPO_ROOT } from './binaries.ts';
import {
  backoffLimit,
  BACKOFF_LIMIT_EXCEEDED,
  type CommandTable,
  DEADLINE_EXCEEDED,
  deadlineAt,
  decide,
  EnvResolutionError,
  type EnvLookups,
  finishStatuses,
  type Job,
  localCommand,
  localPod,
  type Outcome,
  resolveEnv,
  retryStatus,
  startStatus,
  suspendedStatus,
} from './job-logic.ts';
import { spawnSupervised, type Supervised } from './process.ts';
import { isStatus, KubeRest, resourcePath } from './rest.ts';

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
  /** Pause between a failed attempt and the next one (the job controller's is 10 s, doubling). Default 1000. */
  retryDelayMs?: number;
  /** Pause between tries to resolve env whose Secret/ConfigMap is missing (the kubelet retries too). Default 1000. */
  envRetryMs?: number;
  /** SIGTERM -> SIGKILL grace when a process must be stopped. Default 3000. */
  killGraceMs?: number;
  /** Full relist period, a guard against silently stalled watches. Default 30000. */
  resyncMs?: number;
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
  outcome: Outcome;
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
  /** Why we are stopping it (set before killing). */
  stopReason?: 'deadline' | 'deleted' | 'suspended' | 'shutdown';
  deadlineTimer?: NodeJS.Timeout;
  done: Promise<void>;
}

type Key = string;
const keyOf = (namespace: string, name: string): Key => `${namespace}/${name}`;

export class JobRunner extends EventEmitter {
  private readonly options: JobRunnerOptions;
  private readonly rest: KubeRest;
  private readonly log: Logger;
  private readonly commands: CommandTable;
  private readonly running = new Map<Key, Running>();
  private readonly orphanTimers = new Map<Key, NodeJS.Timeout>();
  private readonly queues = new Map<Key, Promise<void>>();
  private readonly outputs = new Map<Key, string>();
  private readonly results = new Map<Key, JobRunResult>();
  /** Jobs (by uid) this runner ran or finished: later (stale) events about them are ignored. */
  private readonly doneUids = new Set<string>();
  private readonly watches: AbortController[] = [];
  private resyncTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private started = false;

  constructor(options: JobRunnerOptions) {
    super();
    this.options = options;
    this.rest = new KubeRest(options.kubeConfig, { fieldManager: 'raykeeper-job-runner' }); // stands in for the kubelet and the job controller
    this.log = options.logger ?? createLogger('job-runner');
    this.commands = { ...DEFAULT_COMMANDS, ...(options.commands ?? {}) };
  }

  /** Lists the Jobs, handles them, and starts watching. Resolves once the initial list is handled. */
  async start(): Promise<void> {
    if (this.started) throw new Error('JobRunner already started');
    this.started = true;
    const scopes = this.options.namespaces?.length ? this.options.namespaces : [undefined];
    await Promise.all(scopes.map((ns) => this.listAndWatch(ns)));
    const resync = this.options.resyncMs ?? 30_000;
    this.resyncTimer = setInterval(() => {
      for (const ns of scopes) void this.list(ns).catch((err) => this.log.warn({ err }, 'job runner resync failed'));
    }, resync);
    this.resyncTimer.unref();
    this.log.info({ namespaces: this.options.namespaces ?? 'all' }, 'job runner started');
  }

  /** Stops watching and kills the processes it runs (their Jobs keep startTime: they are not rerun). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    for (const w of this.watches.splice(0)) w.abort();
    for (const t of this.orphanTimers.values()) clearTimeout(t);
    this.orphanTimers.clear();
    const runs = [...this.running.values()];
    for (const r of runs) {
      r.stopReason ??= 'shutdown';
      void r.proc?.stop(this.options.killGraceMs ?? 3000);
    }
    await Promise.allSettled(runs.map((r) => r.done));
    await Promise.allSettled([...this.queues.values()]);
    this.rest.close();
    this.log.info('job runner stopped');
  }

  /** Output captured so far for a Job (stdout and stderr interleaved; last `outputLimit` bytes). */
  output(namespace: string, name: string): string {
    return this.outputs.get(keyOf(namespace, name)) ?? '';
  }

  /** The result of a Job this runner ran to the end, if any. */
  result(namespace: string, name: string): JobRunResult | undefined {
    return this.results.get(keyOf(namespace, name));
  }

  /** Resolves with the Job's result once this runner finished it (rejects after timeoutMs). */
  waitFor(namespace: string, name: string, timeoutMs = 60_000): Promise<JobRunResult> {
    const key = keyOf(namespace, name);
    const existing = this.results.get(key);
    if (existing) return Promise.resolve(existing);
    return new Promise((resolve, reject) => {
      const onFinished = (r: JobRunResult): void => {
        if (keyOf(r.namespace, r.name) !== key) return;
        clearTimeout(timer);
        this.off('finished', onFinished);
        resolve(r);
      };
      const timer = setTimeout(() => {
        this.off('finished', onFinished);
        reject(new Error(`job ${key} did not finish within ${timeoutMs} ms; output so far:\n${this.output(namespace, name)}`));
      }, timeoutMs);
      this.on('finished', onFinished);
    });
  }

  // ---- watching ----

  private jobsPath(namespace: string | undefined): string {
    return resourcePath({ apiVersion: 'batch/v1', resource: 'jobs', namespace });
  }

  private async list(namespace: string | undefined): Promise<string> {
    const list = await this.rest.get<{ metadata: { resourceVersion: string }; items: Job[] }>(this.jobsPath(namespace), {
      labelSelector: this.options.labelSelector,
    });
    for (const job of list.items) this.enqueue(job);
    return list.metadata.resourceVersion;
  }

  private async listAndWatch(namespace: string | undefined): Promise<void> {
    const resourceVersion = await this.list(namespace);
    if (this.stopped) return;
    const restart = (why: unknown): void => {
      if (this.stopped) return;
      this.log.debug({ err: why, namespace }, 'job watch ended; relisting');
      setTimeout(() => {
        if (!this.stopped) this.listAndWatch(namespace).catch((err) => restart(err));
      }, 1000).unref();
    };
    let ended = false;
    let controller: AbortController | undefined;
    const end = (err: unknown): void => {
      if (ended) return;
      ended = true;
      const i = controller ? this.watches.indexOf(controller) : -1;
      if (i >= 0) this.watches.splice(i, 1);
      controller?.abort(); // an ERROR event (e.g. 410 Gone) leaves the stream open
      restart(err);
    };
    controller = await new Watch(this.options.kubeConfig).watch(
      this.jobsPath(namespace),
      { resourceVersion, allowWatchBookmarks: true, labelSelector: this.options.labelSelector },
      (phase: string, obj: any) => {
        if (phase === 'ADDED' || phase === 'MODIFIED') this.enqueue(obj as Job);
        else if (phase === 'DELETED') this.enqueue(obj as Job, true);
        else if (phase === 'ERROR') end(obj);
      },
      (err: unknown) => end(err),
    );
    if (this.stopped) controller.abort();
    else if (!ended) this.watches.push(controller);
  }

  /** Handles Job events one at a time per Job, in order. */
  private enqueue(job: Job, deleted = false): void {
    if (this.stopped) return;
    const key = keyOf(job.metadata.namespace, job.metadata.name);
    const previous = this.queues.get(key) ?? Promise.resolve();
    const next = previous
      .then(() => (this.stopped ? undefined : this.handle(job, deleted)))
      .catch((err) => this.log.error({ err, job: key }, 'job runner failed to handle a job'));
    this.queues.set(key, next);
    void next.then(() => {
      if (this.queues.get(key) === next) this.queues.delete(key);
    });
  }

  // ---- decisions ----

  private async handle(job: Job, deleted: boolean): Promise<void> {
    const key = keyOf(job.metadata.namespace, job.metadata.name);
    const run = this.running.get(key);
    if (deleted) {
      if (run && run.uid === job.metadata.uid) this.stopRun(run, 'deleted');
      this.clearOrphan(key);
      return;
    }
    if (job.metadata.uid && this.doneUids.has(job.metadata.uid)) return;
    const decision = decide(job, run !== undefined && run.uid === job.metadata.uid);
    switch (decision.kind) {
      case 'finished':
        this.clearOrphan(key);
        return;
      case 'deleting':
        if (run) this.stopRun(run, 'deleted');
        return;
      case 'finalize':
        // Interim condition without the final one: either the runner that runs it is between its two
        // writes (leave it alone) or a runner stopped there. Finish it only if it stays so for a while.
        this.finalizeLater(job, decision.outcome);
        return;
      case 'suspended':
        if (run) this.stopRun(run, 'suspended');
        else if (decision.markSuspended) await this.writeStatus(job, (fresh) => (fresh.spec.suspend ? suspendedStatus(fresh, new Date()) : null));
        return;
      case 'running':
        return;
      case 'orphaned':
        this.watchOrphan(job, decision.deadlineAt);
        return;
      case 'start':
        await this.claimAndRun(job);
        return;
    }
  }

  private finalizeLater(job: Job, outcome: Outcome): void {
    const key = keyOf(job.metadata.namespace, job.metadata.name);
    if (this.orphanTimers.has(key)) return;
    const timer = setTimeout(() => {
      this.orphanTimers.delete(key);
      void (async () => {
        const fresh = await this.rest.get<Job>(resourcePath({ apiVersion: 'batch/v1', resource: 'jobs', namespace: job.metadata.namespace, name: job.metadata.name }));
        if (fresh.metadata.uid !== job.metadata.uid || decide(fresh, false).kind !== 'finalize') return;
        if (await this.finish(fresh, outcome, { succeeded: fresh.status?.succeeded ?? 0, failed: fresh.status?.failed ?? 0 })) this.record(fresh, outcome, null, 0);
      })().catch((err) => {
        if (!isStatus(err, 404)) this.log.error({ err, job: key }, 'cannot finish a half-finished job');
      });
    }, this.options.finalizeAfterMs ?? 5000);
    timer.unref();
    this.orphanTimers.set(key, timer);
  }

  private clearOrphan(key: Key): void {
    const t = this.orphanTimers.get(key);
    if (t) clearTimeout(t);
    this.orphanTimers.delete(key);
  }

  /** A started Job we do not run: never rerun it; fail it at its deadline like the job controller would. */
  private watchOrphan(job: Job, at: number | undefined): void {
    const key = keyOf(job.metadata.namespace, job.metadata.name);
    if (this.orphanTimers.has(key)) return;
    this.log.warn({ job: key, startTime: job.status?.startTime }, 'job already started by an earlier runner; not running it again');
    if (at === undefined) return;
    const timer = setTimeout(() => {
      this.orphanTimers.delete(key);
      this.finish(job, DEADLINE_EXCEEDED, { succeeded: 0, failed: (job.status?.failed ?? 0) + (job.status?.active ? 1 : 0) })
        .then((done) => done && this.record(job, DEADLINE_EXCEEDED, null, 0))
        .catch((err) => this.log.error({ err, job: key }, 'cannot fail an orphaned job'));
    }, Math.max(0, at - Date.now()));
    timer.unref();
    this.orphanTimers.set(key, timer);
  }

  // ---- status writes ----

  /**
   * Reads the Job, computes a status patch from the fresh copy (null: nothing to write), and writes it
   * through /status guarded by that copy's resourceVersion; re-reads and retries on 409 Conflict.
   * Resolves with the stored Job, or undefined when nothing was written (or the Job is gone).
   */
  private async writeStatus(job: Job, compute: (fresh: Job) => Record<string, unknown> | null): Promise<Job | undefined> {
    const path = resourcePath({ apiVersion: 'batch/v1', resource: 'jobs', namespace: job.metadata.namespace, name: job.metadata.name });
    for (let attempt = 0; attempt < 10; attempt++) {
      let fresh: Job;
      try {
        fresh = await this.rest.get<Job>(path);
      } catch (err) {
        if (isStatus(err, 404)) return undefined;
        throw err;
      }
      if (job.metadata.uid && fresh.metadata.uid !== job.metadata.uid) return undefined; // replaced by a new Job
      const status = compute(fresh);
      if (status === null) return undefined;
      try {
        return await this.rest.patch<Job>(`${path}/status`, { metadata: { resourceVersion: fresh.metadata.resourceVersion }, status });
      } catch (err) {
        if (isStatus(err, 409)) continue;
        if (isStatus(err, 404)) return undefined;
        throw err;
      }
    }
    throw new Error(`too many conflicts writing the status of job ${job.metadata.namespace}/${job.metadata.name}`);
  }

  /** Writes the two final status updates; false when there was nothing to finish (already finished, gone). */
  private async finish(job: Job, outcome: Outcome, counts: { succeeded: number; failed: number }): Promise<boolean> {
    const now = new Date();
    let second: Record<string, unknown> | undefined;
    const first = await this.writeStatus(job, (fresh) => {
      const d = decide(fresh, true);
      if (d.kind === 'finished' || d.kind === 'deleting') return null;
      const [a, b] = finishStatuses(fresh, outcome, counts, now);
      second = b;
      return a;
    });
    if (!first || !second) return false;
    await this.writeStatus(first, (fresh) => (decide(fresh, true).kind === 'finished' ? null : finishStatuses(fresh, outcome, counts, now)[1]));
    this.log.info({ job: keyOf(job.metadata.namespace, job.metadata.name), outcome, ...counts }, 'job finished');
    return true;
  }

  private record(job: Job, outcome: Outcome, exitCode: number | null, attempts: number): void {
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
    this.results.set(keyOf(job.metadata.namespace, job.metadata.name), result);
    this.emit('finished', result);
  }

  // ---- running ----

  private async claimAndRun(job: Job): Promise<void> {
    const key = keyOf(job.metadata.namespace, job.metadata.name);
    const claimed = await this.writeStatus(job, (fresh) => (decide(fresh, false).kind === 'start' ? startStatus(fresh, new Date()) : null));
    if (!claimed) return; // someone else started it, or it changed: its next event decides
    const run: Running = { uid: claimed.metadata.uid ?? '', done: Promise.resolve() };
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
      });
  }

  private stopRun(run: Running, reason: NonNullable<Running['stopReason']>): void {
    if (run.stopReason) return;
    run.stopReason = reason;
    void run.proc?.stop(this.options.killGraceMs ?? 3000);
  }

  private append(key: Key, text: string): void {
    const limit = this.options.outputLimit ?? 65_536;
    const next = (this.outputs.get(key) ?? '') + text;
    this.outputs.set(key, next.length > limit ? next.slice(next.length - limit) : next);
  }

  private lookups(): EnvLookups {
    const read = async (resource: string, namespace: string, name: string): Promise<{ data?: Record<string, string>; binaryData?: Record<string, string> } | undefined> => {
      try {
        return await this.rest.get(resourcePath({ apiVersion: 'v1', resource, namespace, name }));
      } catch (err) {
        if (isStatus(err, 404)) return undefined;
        throw err;
      }
    };
    const decode = (m: Record<string, string> | undefined): Record<string, string> =>
      Object.fromEntries(Object.entries(m ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
    return {
      secret: async (ns, name) => {
        const s = await read('secrets', ns, name);
        return s && decode(s.data);
      },
      configMap: async (ns, name) => {
        const c = await read('configmaps', ns, name);
        return c && { ...decode(c.binaryData), ...(c.data ?? {}) };
      },
    };
  }

  private baseEnv(): Record<string, string> {
    return this.options.baseEnv ?? defaultBaseEnv();
  }

  /** Runs attempts until success, the backoff limit, the deadline, or a stop; then writes the outcome. */
  private async runAttempts(job: Job, run: Running): Promise<void> {
    const key = keyOf(job.metadata.namespace, job.metadata.name);
    const container = job.spec.template.spec.containers[0];
    let failed = job.status?.failed ?? 0;
    let attempts = 0;
    let exitCode: number | null = null;
    let outcome: Outcome | undefined;
    while (outcome === undefined && !run.stopReason) {
      attempts++;
      const pod = localPod(job, randomBytes(3).toString('hex').slice(0, 5), randomUUID());
      let env: Record<string, string> | undefined;
      let command: { file: string; args: string[] } | undefined;
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
            await new Promise((r) => setTimeout(r, this.options.envRetryMs ?? 1000));
          }
        }
        if (env === undefined) break;
        command = localCommand(container, this.commands, env);
      } catch (err) {
        // The container cannot start at all (no command, unsupported env source): a failed pod.
        this.append(key, `job runner: cannot start the container: ${(err as Error).message}\n`);
        this.log.error({ job: key, err }, 'cannot start the job container');
      }
      if (run.stopReason) break;
      if (command && env) {
        exitCode = await this.spawnAttempt(key, run, command, { ...this.baseEnv(), ...env }, container!.workingDir);
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
      await this.writeStatus(job, (fresh) => (decide(fresh, true).kind === 'running' ? retryStatus(failed) : null));
      await new Promise((r) => setTimeout(r, this.options.retryDelayMs ?? 1000));
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

  private async spawnAttempt(key: Key, run: Running, command: { file: string; args: string[] }, env: Record<string, string>, workingDir: string | undefined): Promise<number | null> {
    const cwd = workingDir && existsSync(workingDir) ? workingDir : (this.options.cwd ?? process.cwd());
    this.log.info({ job: key, command: command.file, args: command.args.length }, 'running job container locally');
    let proc: Supervised;
    try {
      proc = await spawnSupervised(command.file, command.args, { env, cwd, group: true, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      // Like an image whose entrypoint does not exist: the container fails (exit code 127 in a shell).
      this.append(key, `job runner: ${(err as Error).message}\n`);
      return 127;
    }
    run.proc = proc;
    this.emit('started', { namespace: key.split('/')[0], name: key.split('/')[1], pid: proc.pid });
    for (const [stream, name] of [
      [proc.child.stdout, 'stdout'],
      [proc.child.stderr, 'stderr'],
    ] as const) {
      let partial = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        this.append(key, chunk);
        const lines = (partial + chunk).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) this.log.info({ job: key, stream: name }, line);
      });
      stream?.on('end', () => partial && this.log.info({ job: key, stream: name }, partial));
    }
    if (run.stopReason) void proc.stop(this.options.killGraceMs ?? 3000);
    const { code, signal } = await proc.exited;
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
