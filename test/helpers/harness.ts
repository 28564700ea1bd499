// Shared pieces of the controller integration tests (every folder of test/): the real API server (per-test
// namespace), a real redis-server, the test job runner, the controller in-process or as a child process.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { Test } from 'tap';
import { KubeClient } from '../../kube/client.ts';
import { startController, type RunningController } from '../../controller/main.ts';
import { gcsFtCleanupModule } from '../../controller/gcsft-cleanup/module.ts';
import { rayClusterOperatorModule } from '../../controller/raycluster/module.ts';
import { createLogger, type Logger } from '../../kube/logger.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { JobRunner } from '../../localcluster/job-runner.ts';
import { GCS_FT_REDIS_CLEANUP_FINALIZER } from '../../src/names.ts';
import { RAYCLUSTERS, type RayCluster } from '../../src/types.ts';
import { kubeconfigFile, testNamespace, type TestNamespace } from './control-plane.ts';
import { startRedisServer, type RedisServer } from './redis-server.ts';
import { EVENTS, JOBS, PODS } from '../../kube/resources.ts';

export const quiet = createLogger('test', { level: process.env.TEST_LOG_LEVEL ?? 'silent' });
export { GCS_FT_REDIS_CLEANUP_FINALIZER as FINALIZER };

export { until } from './until.ts';

export interface Env {
  ns: TestNamespace;
  kube: KubeClient;
}

export async function env(tt: Test): Promise<Env> {
  const ns = await testNamespace(tt);
  const kube = new KubeClient(ns.kubeConfig);
  tt.teardown(() => kube.close());
  return { ns, kube };
}

export async function redis(tt: Test, opts: { password?: string } = {}): Promise<{ server: RedisServer; client: Redis }> {
  const server = await startRedisServer(opts.password ? { password: opts.password } : {});
  const client = new Redis({ host: server.host, port: server.port, lazyConnect: true, maxRetriesPerRequest: 1, password: opts.password });
  await client.connect();
  tt.teardown(async () => {
    client.disconnect();
    await server.stop();
  });
  return { server, client };
}

/** GCS tables the way Ray >= 2.35 writes them: one hash per table, `RAY<ns>@<TABLE>`. */
export async function seedRay(client: Redis, ns: string): Promise<string[]> {
  const keys = ['NODE', 'JOB', 'ACTOR', 'KV'].map((table) => `RAY${ns}@${table}`);
  for (const k of keys) await client.hset(k, 'f1', 'v1', 'f2', 'v2');
  await client.set(`RAY${ns}@JobCounter`, '3');
  return [...keys, `RAY${ns}@JobCounter`];
}

export async function rayKeys(client: Redis, ns: string): Promise<string[]> {
  return (await client.keys(`RAY${ns}@*`)).sort();
}

export function rayCluster(
  name: string,
  redisAddress: string,
  extra: { finalizers?: string[]; annotations?: Record<string, string>; headEnv?: Array<Record<string, unknown>> } = {},
): RayCluster {
  return {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: {
      name,
      annotations: { 'ray.io/ft-enabled': 'true', ...(extra.annotations ?? {}) },
      ...(extra.finalizers ? { finalizers: extra.finalizers } : {}),
    },
    spec: {
      headGroupSpec: {
        rayStartParams: {},
        template: {
          spec: {
            containers: [
              {
                name: 'ray-head',
                image: 'rayproject/ray:2.40.0',
                env: [{ name: 'RAY_REDIS_ADDRESS', value: redisAddress }, ...((extra.headEnv ?? []) as never[])],
              },
            ],
          },
        },
      },
      workerGroupSpecs: [
        {
          groupName: 'w',
          replicas: 1,
          minReplicas: 0,
          maxReplicas: 1,
          rayStartParams: {},
          template: { spec: { containers: [{ name: 'ray-worker', image: 'rayproject/ray:2.40.0' }] } },
        },
      ],
    },
  };
}

export async function createCluster(e: Env, body: RayCluster): Promise<RayCluster> {
  return e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, body);
}

export async function getCluster(e: Env, name: string): Promise<RayCluster | undefined> {
  return e.kube.getOrUndefined({ ...RAYCLUSTERS, namespace: e.ns.name, name });
}

/** Head and worker pods as KubeRay would have made them (no nodeName: the API server deletes them at once). */
export async function createPods(e: Env, cluster: RayCluster, opts: { headNodeName?: string } = {}): Promise<void> {
  const owner = { apiVersion: 'ray.io/v1', kind: 'RayCluster', name: cluster.metadata.name!, uid: cluster.metadata.uid!, controller: true };
  for (const [suffix, type] of [
    ['head', 'head'],
    ['worker-w-0', 'worker'],
  ] as const) {
    const spec: Record<string, unknown> = { containers: [{ name: 'ray', image: 'rayproject/ray:2.40.0' }] };
    if (type === 'head' && opts.headNodeName) spec.nodeName = opts.headNodeName;
    await e.kube.create(
      { ...PODS, namespace: e.ns.name },
      {
        metadata: {
          name: `${cluster.metadata.name}-${suffix}`,
          labels: { 'ray.io/cluster': cluster.metadata.name!, 'ray.io/node-type': type },
          ownerReferences: [owner],
        },
        spec,
      },
    );
  }
}

export async function listJobs(
  e: Env,
): Promise<Array<{ metadata: { name: string; uid: string }; status?: { conditions?: Array<{ type: string; status: string }> } }>> {
  return (await e.kube.list({ ...JOBS, namespace: e.ns.name })).items as Array<{
    metadata: { name: string; uid: string };
    status?: { conditions?: Array<{ type: string; status: string }> };
  }>;
}

export interface EventLite {
  type: string;
  reason: string;
  message: string;
  count?: number;
  involvedObject: { name: string; kind: string };
}

export async function events(e: Env, reason?: string): Promise<EventLite[]> {
  const items = (await e.kube.list({ ...EVENTS, namespace: e.ns.name })).items as EventLite[];
  return reason ? items.filter((x) => x.reason === reason) : items;
}

export async function jobRunner(tt: Test, e: Env): Promise<JobRunner> {
  const runner = new JobRunner({ kubeConfig: e.ns.kubeConfig, namespaces: [e.ns.name], logger: quiet, killGraceMs: 1000 });
  await runner.start();
  tt.teardown(() => runner.stop());
  return runner;
}

/** The controller in this process, watching only the test namespace. */
export async function controllerInProcess(
  tt: Test,
  e: Env,
  opts: {
    env?: Record<string, string>;
    moduleFlags?: Record<string, string | boolean>;
    logger?: Logger;
    /** Also the pod operator (its whole-spec caches): standalone, as the image runs. */
    withOperator?: boolean;
  } = {},
): Promise<RunningController> {
  const c = await startController({
    kubeConfig: e.ns.kubeConfig,
    watchNamespace: e.ns.name,
    workers: 2,
    // Only the reconciler under test (the RayJob one has its own tests).
    modules: opts.withOperator ? [gcsFtCleanupModule, rayClusterOperatorModule] : [gcsFtCleanupModule],
    env: { ...opts.env },
    logger: opts.logger ?? quiet,
    moduleFlags: { 'cleanup-image': 'raykeeper:test', ...(opts.moduleFlags ?? {}) },
    retry: { baseMs: 100, maxMs: 2000, jitter: 0.2 },
  });
  tt.teardown(() => c.stop());
  return c;
}

export interface ChildController {
  proc: ChildProcess;
  /** Port of its /healthz /readyz /metrics. */
  port: Promise<number>;
  log(): string;
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Flags of a replica electing a leader on Lease `name` in `namespace`, with short timings (3 s / 2 s / 0.4 s). */
export function leaderFlags(namespace: string, name: string, identity: string): string[] {
  return [
    '--leader-elect',
    '--lease-namespace',
    namespace,
    '--lease-name',
    name,
    '--identity',
    identity,
    '--lease-duration',
    '3',
    '--renew-deadline',
    '2',
    '--retry-period',
    '0.4',
  ];
}

/** `raykeeper controller` as a child process (what a pod runs), killed on teardown. */
export async function controllerChild(
  tt: Test,
  e: Env,
  args: string[] = [],
  extraEnv: Record<string, string> = {},
): Promise<ChildController> {
  const kubeconfig = await kubeconfigFile(tt, e.ns.cp, e.ns.name);
  const proc = spawn(
    process.execPath,
    [
      join(REPO_ROOT, 'bin', 'raykeeper.js'),
      'controller',
      '--reconcilers',
      'raycluster',
      '--kubeconfig',
      kubeconfig,
      '--watch-namespace',
      e.ns.name,
      '--health-port',
      '0',
      '--health-host',
      '127.0.0.1',
      '--cleanup-image',
      'raykeeper:test',
      ...args,
    ],
    {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        NO_PROXY: '127.0.0.1,localhost',
        LOG_LEVEL: 'info',
        ...extraEnv,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let resolvePort: (p: number) => void;
  const port = new Promise<number>((r) => (resolvePort = r));
  const onData = (chunk: Buffer) => {
    out += chunk.toString();
    const m = /"port":(\d+),"msg":"health and metrics server listening"/.exec(out);
    if (m) resolvePort(Number(m[1]));
  };
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
    return exited;
  };
  tt.teardown(() => kill('SIGKILL'));
  return { proc, port, log: () => out, exited, kill };
}

export async function metricsOf(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  return res.text();
}

export function metricValue(text: string, name: string, labels = ''): number | undefined {
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `) || (labels === '' && l.startsWith(`${name} `)));
  return line ? Number(line.split(' ').pop()) : undefined;
}
