// Assembles the controller process: KubeConfig, manager (informers, queues, leader election), the
// registered reconcilers, and the /healthz /readyz /metrics server. `startController` is what the CLI
// runs and what in-process tests use.
import { registerKubeRayMetrics } from './kuberay-metrics.ts';
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { KubeCredentials } from '../kube/kubeconfig.ts';
import { createLogger, type Logger } from '../kube/logger.ts';
import { createMetricsRegistry, type Registry } from '../kube/metrics.ts';
import { Manager, type RunOutcome } from '../kube/manager.ts';
import { loadKubeConfig } from '../kube/kubeconfig.ts';
import { buildHealthServer, close, listen } from '../kube/health-server.ts';
import type { InformerTimings } from '../kube/informer.ts';
import type { BackoffOptions } from '../kube/backoff.ts';
import type { ReconcilerModule } from '../kube/reconciler.ts';
import { RECONCILER_MODULES } from './reconcilers.ts';
import { companionModules, type CompanionSetting } from './companion.ts';

export interface ControllerOptions {
  /** A kubeconfig file; else KUBECONFIG / ~/.kube/config / in-cluster. */
  kubeconfig?: string | undefined;
  /** Or ready credentials (tests pass client-node's KubeConfig). */
  kubeConfig?: KubeCredentials;
  watchNamespace?: string | undefined;
  workers?: number;
  /** `--qps` / `--burst` (kube/rate-limit.ts); undefined: no client side cap. */
  rateLimit?: { qps: number; burst: number } | undefined;
  leaderElect?: boolean;
  leaseNamespace?: string | undefined;
  leaseName?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** Namespaces split among replicas in this many shards (kube/sharding.ts); > 1 needs leaderElect. */
  shards?: number;
  identity?: string | undefined;
  /** Port of /healthz /readyz /metrics; 0 = any free port; undefined = no server. */
  healthPort?: number | undefined;
  healthHost?: string;
  resyncPeriodMs?: number;
  shutdownTimeoutMs?: number;
  informerTimings?: Partial<InformerTimings>;
  retry?: BackoffOptions;
  /** Which reconcilers run (default: all of RECONCILER_MODULES). */
  modules?: ReconcilerModule[];
  /** Beside KubeRay (controller/companion.ts): the CLI defaults to 'auto'; in-process default 'off'. */
  companion?: CompanionSetting;
  /** Parsed module flags (see ReconcilerModule.flags). */
  moduleFlags?: Record<string, string | boolean | undefined>;
  env?: Record<string, string | undefined>;
  logger?: Logger;
  metrics?: Registry;
}

export interface RunningController {
  manager: Manager;
  app: Server | undefined;
  /** Port the health server listens on (when started). */
  port: number | undefined;
  /** Resolves when the manager stops: 'stopped' (after stop()) or 'lost-leadership'. */
  done: Promise<RunOutcome>;
  /** Graceful stop (what SIGTERM does); resolves when everything is closed. */
  stop(): Promise<RunOutcome>;
}

const SA_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** Where the Lease lives when --lease-namespace is not given: POD_NAMESPACE, the pod's namespace, 'default'. */
export function defaultLeaseNamespace(env: Record<string, string | undefined>): string {
  if (env.POD_NAMESPACE) return env.POD_NAMESPACE;
  try {
    if (existsSync(SA_NAMESPACE_FILE)) return readFileSync(SA_NAMESPACE_FILE, 'utf8').trim() || 'default';
  } catch {
    // not in a pod
  }
  return 'default';
}

export function defaultIdentity(): string {
  return `${hostname()}_${randomBytes(4).toString('hex')}`;
}

export async function startController(options: ControllerOptions): Promise<RunningController> {
  const env = options.env ?? process.env;
  const logger = options.logger ?? createLogger('raykeeper-controller');
  const metrics = options.metrics ?? createMetricsRegistry();
  const kubeConfig = options.kubeConfig ?? loadKubeConfig(options.kubeconfig);
  const identity = options.identity ?? defaultIdentity();
  const manager = new Manager({
    kubeConfig,
    logger,
    metrics,
    watchNamespace: options.watchNamespace || undefined,
    workers: options.workers,
    rateLimit: options.rateLimit,
    leaderElection: options.leaderElect
      ? {
          namespace: options.leaseNamespace || defaultLeaseNamespace(env),
          name: options.leaseName ?? 'raykeeper-controller',
          identity,
          leaseDurationMs: options.leaseDurationMs,
          renewDeadlineMs: options.renewDeadlineMs,
          retryPeriodMs: options.retryPeriodMs,
        }
      : undefined,
    shards: options.shards,
    resyncPeriodMs: options.resyncPeriodMs,
    informerTimings: options.informerTimings,
    retry: options.retry,
    shutdownTimeoutMs: options.shutdownTimeoutMs,
    env,
  });
  const modules = await companionModules(manager.ctx, options.modules ?? RECONCILER_MODULES, options.companion ?? 'off');
  manager.ctx.reconcilers = modules.map((m) => m.name);
  for (const module of modules) manager.add(await module.create(manager.ctx, options.moduleFlags ?? {}));
  const kubeRayMetrics = registerKubeRayMetrics(manager.ctx, metrics);
  if (kubeRayMetrics.length > 0) logger.info({ metrics: kubeRayMetrics }, "KubeRay's metrics exported for the objects this process drives");
  let app: Server | undefined;
  let port: number | undefined;
  if (options.healthPort !== undefined) {
    app = buildHealthServer({ live: () => manager.liveness(), ready: () => manager.readiness(), metrics, logger });
    port = await listen(app, options.healthPort, options.healthHost ?? '0.0.0.0');
    logger.info({ port }, 'health and metrics server listening');
  }
  const abort = new AbortController();
  logger.info(
    {
      identity,
      watchNamespace: options.watchNamespace ?? 'all',
      leaderElect: options.leaderElect === true,
      shards: options.shards ?? 1,
      workers: options.workers ?? 4,
      qps: options.rateLimit?.qps ?? 0,
      burst: options.rateLimit?.burst ?? 0,
    },
    'controller starting',
  );
  const done = manager
    .run(abort.signal)
    .finally(() => (app ? close(app) : undefined))
    .then((outcome) => {
      logger.info({ outcome }, 'controller stopped');
      return outcome;
    });
  return {
    manager,
    app,
    port,
    done,
    stop: async () => {
      abort.abort();
      return done;
    },
  };
}
