// `raykeeper controller`: the reconciling process.
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { argumentProblem, usageError } from '../bin/args.ts';
import { createLogger } from '../kube/logger.ts';
import { DEFAULT_CONTROLLER_HEALTH_PORT } from '../src/names.ts';
import { RECONCILER_MODULES } from './reconcilers.ts';
import { parseCompanionSetting } from './companion.ts';
import { DEFAULT_LEADER_TIMING, leaderTimingProblem } from '../kube/leader.ts';
import { errorMessage } from '../src/errors.ts';
import { clientRateLimit } from '../kube/rate-limit.ts';

const BASE_OPTIONS = {
  kubeconfig: { type: 'string' },
  'watch-namespace': { type: 'string' },
  workers: { type: 'string' },
  'reconcile-concurrency': { type: 'string' },
  qps: { type: 'string' },
  burst: { type: 'string' },
  'leader-elect': { type: 'boolean' },
  'lease-namespace': { type: 'string' },
  'lease-name': { type: 'string' },
  'lease-duration': { type: 'string' },
  'renew-deadline': { type: 'string' },
  'retry-period': { type: 'string' },
  shards: { type: 'string' },
  identity: { type: 'string' },
  'health-port': { type: 'string' },
  'health-host': { type: 'string' },
  'resync-period': { type: 'string' },
  'shutdown-timeout': { type: 'string' },
  reconcilers: { type: 'string' },
  companion: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsOptionsConfig;

export function controllerUsage(): string {
  const moduleLines = RECONCILER_MODULES.flatMap((m) => [
    `  ${m.name}: ${m.summary}`,
    ...Object.entries(m.flags ?? {}).map(([flag, f]) => `    --${flag}${f.type === 'string' ? ' VALUE' : ''}\n        ${f.help}`),
  ]);
  return `Usage: raykeeper controller [options]

Watches RayClusters (and RayJobs) and reconciles them. Only the leader reconciles when --leader-elect
is on; a leader that cannot renew the Lease within --renew-deadline stops, aborts its reconciles and
exits 1 (to be restarted as a fresh candidate). SIGTERM stops gracefully (in-flight reconciles finish,
the Lease is released). With --shards N > 1 the namespaces are split among the replicas, each shard
held through its own Lease; a replica that loses a shard aborts that shard's reconciles and campaigns
again instead of exiting.

Options:
  --kubeconfig FILE          kubeconfig (default: KUBECONFIG, ~/.kube/config, then in-cluster)
  --watch-namespace NS       watch only this namespace (default: all)
  --workers N                concurrent reconciles per reconciler (default 4); KubeRay's name for it,
                             --reconcile-concurrency N, is taken too
  --qps Q                    cap on API requests a second, client side (KubeRay's flag; default 0: no
                             cap, API Priority and Fairness queues a client that asks too much; KubeRay's
                             default is 100). Lease renewals never wait behind it
  --burst N                  requests sent at once before --qps paces them (default 2 x --qps; needs --qps)
  --leader-elect             elect a leader through a coordination.k8s.io/v1 Lease
  --lease-namespace NS       namespace of the Lease (default: POD_NAMESPACE, the pod's, else default)
  --lease-name NAME          name of the Lease (default raykeeper-controller)
  --lease-duration SECONDS   lease duration (default 15): a standby takes over within it
  --renew-deadline SECONDS   the leader stops (and exits) this long after its last successful renew
                             unless it renews again (default 10; < --lease-duration)
  --retry-period SECONDS     renew / campaign period (default 2)
  --shards N                 split namespaces among replicas in N shards, each held through its own
                             Lease <lease-name>-shard-<i> (default 1: one leader; > 1 needs --leader-elect).
                             A replica that loses a shard aborts that shard's reconciles and campaigns
                             again instead of exiting
  --identity ID              this replica's identity in the Lease (default hostname_random)
  --health-port PORT         /healthz /readyz /metrics port (default ${DEFAULT_CONTROLLER_HEALTH_PORT}; 0 = any free port)
  --health-host HOST         listen address (default 0.0.0.0)
  --resync-period SECONDS    re-enqueue every object this often (default 600)
  --shutdown-timeout SECONDS how long in-flight reconciles may finish on SIGTERM (default 20)
  --reconcilers LIST         comma-separated subset to run (default: all: ${RECONCILER_MODULES.map((m) => m.name).join(', ')})
  --companion auto|on|off    beside KubeRay: on = leave RayJobs and Ray pods to KubeRay's operator;
                             auto (default) = on when KubeRay's Lease ray-operator-leader is held
  -h, --help                 this text

Reconcilers and their options:
${moduleLines.join('\n')}

Environment: ENABLE_GCS_FT_REDIS_CLEANUP (default on unless "false"), RAYKEEPER_IMAGE, LOG_LEVEL.
`;
}

/** Flags an earlier version accepted as aliases: named in the error, with the one to use. */
const REMOVED_FLAGS: Record<string, string> = { 'leader-election-namespace': 'lease-namespace', 'http-port': 'health-port' };

/** parseArgs' error in one line (bin/args.ts), naming the flag that replaced a removed alias. */
export function argumentError(err: unknown): string {
  const problem = argumentProblem(err);
  const name = /^unknown option --(\S+)$/.exec(problem)?.[1];
  const replacement = name === undefined ? undefined : REMOVED_FLAGS[name];
  return replacement ? `${problem} (removed: use --${replacement})` : problem;
}

function seconds(raw: string | undefined, flag: string, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${flag} must be a positive number of seconds, got ${JSON.stringify(raw)}`);
  return Math.round(n * 1000);
}

function integer(raw: string | undefined, flag: string, fallback: number, min: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${flag} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
  return n;
}

function number(raw: string | undefined, flag: string, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || n < 0) throw new Error(`--${flag} must be a number >= 0, got ${JSON.stringify(raw)}`);
  return n;
}

/** --qps and --burst; a burst without a cap would be silently ignored, so it is refused. */
function rateLimitFlags(qps: string | undefined, burst: string | undefined): { qps: number; burst: number } | undefined {
  const q = number(qps, 'qps', 0);
  const b = burst === undefined ? undefined : integer(burst, 'burst', 1, 1);
  if (b !== undefined && q === 0) throw new Error('--burst needs --qps (without a cap there is nothing to burst past)');
  return clientRateLimit(q, b);
}

/** --workers, or KubeRay's name for it; both given must agree. */
function reconcileConcurrency(workers: string | undefined, kuberay: string | undefined): number {
  const a = integer(workers, 'workers', 4, 1);
  const b = integer(kuberay, 'reconcile-concurrency', a, 1);
  if (workers !== undefined && kuberay !== undefined && a !== b)
    throw new Error(`--workers ${a} and --reconcile-concurrency ${b} name the same setting: give one`);
  return b;
}

export async function run(argv: string[]): Promise<number> {
  const options: ParseArgsOptionsConfig = { ...BASE_OPTIONS };
  for (const m of RECONCILER_MODULES) for (const [flag, f] of Object.entries(m.flags ?? {})) options[flag] = { type: f.type };
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false }) as {
      values: Record<string, string | boolean | undefined>;
    });
  } catch (err) {
    process.stderr.write(usageError('raykeeper controller', argumentError(err)));
    return 2;
  }
  if (values.help) {
    process.stdout.write(controllerUsage());
    return 0;
  }
  const s = (k: string) => (typeof values[k] === 'string' ? (values[k] as string) : undefined);
  const logger = createLogger('raykeeper-controller');
  let modules = RECONCILER_MODULES;
  let config;
  try {
    const wanted = s('reconcilers')
      ?.split(',')
      .map((x) => x.trim())
      .filter(Boolean);
    if (wanted) {
      const unknown = wanted.filter((w) => !RECONCILER_MODULES.some((m) => m.name === w));
      if (unknown.length > 0) throw new Error(`--reconcilers: unknown ${unknown.join(', ')}`);
      modules = RECONCILER_MODULES.filter((m) => wanted.includes(m.name));
    }
    const leaseDurationMs = seconds(s('lease-duration'), 'lease-duration', DEFAULT_LEADER_TIMING.leaseDurationMs);
    const renewDeadlineMs = seconds(
      s('renew-deadline'),
      'renew-deadline',
      Math.min(DEFAULT_LEADER_TIMING.renewDeadlineMs, Math.round((leaseDurationMs * 2) / 3)),
    );
    const retryPeriodMs = seconds(
      s('retry-period'),
      'retry-period',
      Math.min(DEFAULT_LEADER_TIMING.retryPeriodMs, Math.round(renewDeadlineMs / 5)),
    );
    const timingProblem =
      values['leader-elect'] === true ? leaderTimingProblem({ leaseDurationMs, renewDeadlineMs, retryPeriodMs }) : undefined;
    if (timingProblem) throw new Error(`${timingProblem} (--lease-duration, --renew-deadline, --retry-period)`);
    const shards = integer(s('shards'), 'shards', 1, 1);
    if (shards > 1 && values['leader-elect'] !== true) throw new Error('--shards > 1 needs --leader-elect');
    config = {
      kubeconfig: s('kubeconfig'),
      watchNamespace: s('watch-namespace'),
      workers: reconcileConcurrency(s('workers'), s('reconcile-concurrency')),
      rateLimit: rateLimitFlags(s('qps'), s('burst')),
      leaderElect: values['leader-elect'] === true,
      leaseNamespace: s('lease-namespace'),
      leaseName: s('lease-name') ?? 'raykeeper-controller',
      leaseDurationMs,
      renewDeadlineMs,
      retryPeriodMs,
      shards,
      identity: s('identity'),
      healthPort: integer(s('health-port'), 'health-port', DEFAULT_CONTROLLER_HEALTH_PORT, 0),
      healthHost: s('health-host') ?? '0.0.0.0',
      resyncPeriodMs: seconds(s('resync-period'), 'resync-period', 600_000),
      shutdownTimeoutMs: seconds(s('shutdown-timeout'), 'shutdown-timeout', 20_000),
      modules,
      companion: parseCompanionSetting(s('companion')),
      moduleFlags: values,
      logger,
    };
  } catch (err) {
    process.stderr.write(`raykeeper controller: ${errorMessage(err)}\n`);
    return 2;
  }
  let controller;
  try {
    // V8's heap sizing for a small footprint: with 10,000 RayClusters cached the controller peaks at
    // ~125 MiB instead of ~170 (and settles at ~115 instead of ~165), for a little more GC work
    // (bench/controller.ts). Heap growth reads the flag as it goes, so setting it here works.
    setFlagsFromString('--optimize-for-size');
    const { startController } = await import('./main.ts');
    controller = await startController(config);
  } catch (err) {
    logger.error({ err: errorMessage(err) }, 'controller failed to start');
    return 1;
  }
  let signals = 0;
  const onSignal = (signal: string) => {
    signals += 1;
    if (signals > 1) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    logger.info({ signal }, 'shutting down');
    void controller.stop();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    const outcome = await controller.done;
    if (outcome === 'lost-leadership') {
      // Whatever still runs must not write as a leader: exit now, as controller-runtime does.
      logger.fatal('lost leadership: exiting (restart as a new candidate)');
      process.exit(1);
    }
    return 0;
  } catch (err) {
    logger.fatal({ err: err instanceof Error ? err.stack : String(err) }, 'controller failed');
    return 1;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}
