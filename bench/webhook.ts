// Webhook benchmark: HTTPS throughput and latency of the RayCluster mutate route under 32 keep-alive
// connections, beside a bare Fastify HTTPS route that answers a fixed AdmissionReview, same machine, same
// run. Each server runs in its own child process; autocannon drives them from this one. The measured time
// is split into alternating rounds (webhook, bare, bare, webhook, ...) so that other load on the machine
// hits both alike. ~30 s in total.
//
//   npx node bench/webhook.ts                            (standalone)
//   import { runWebhookBench } from './webhook.ts'       (bench/run.ts)
import { benchClusterSpec } from './sample-cluster.ts';
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { generateCertificates } from '../certs/generate.ts';
import { writeBundle } from '../certs/files.ts';
import { MUTATE_RAYCLUSTER_PATH } from '../src/names.ts';

export interface RouteFigures {
  /** 2xx answers per second over the measured windows. */
  requestsPerSecond: number;
  p50Micros: number;
  p99Micros: number;
  /** Server process CPU (user + system) per answered request. */
  cpuMicrosPerRequest: number;
  requests: number;
  /** Socket errors, timeouts and non-2xx answers (must be 0 for the figures to mean anything). */
  failures: number;
}

export interface WebhookBenchFigures {
  connections: number;
  /** Measured seconds per route (sum of its rounds). */
  durationSeconds: number;
  rounds: number;
  webhook: RouteFigures;
  bare: RouteFigures;
  /** webhook / bare throughput. Target >= 0.85. */
  throughputRatio: number;
}

export interface WebhookBenchOptions {
  connections?: number;
  /** Measured seconds per route, split into `rounds` alternating windows. Default 12 s in 8 rounds. */
  durationSeconds?: number;
  rounds?: number;
  warmupSeconds?: number;
  /** Print the table (default true). */
  print?: boolean;
}

const THIS_FILE = fileURLToPath(import.meta.url);
const BARE_PATH = '/mutate';

/** A RayCluster CREATE as `kubectl apply` sends it: GCS FT by annotation, head and one worker group. */
export function sampleReview(): object {
  const object = {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: {
      name: 'raycluster-external-redis',
      namespace: 'ray',
      annotations: { 'ray.io/ft-enabled': 'true', 'kubectl.kubernetes.io/last-applied-configuration': '{"apiVersion":"ray.io/v1","kind":"RayCluster"}' },
      labels: { app: 'ray', team: 'ml' },
    },
    spec: benchClusterSpec([
      { name: 'RAY_REDIS_ADDRESS', value: 'redis.ray.svc:6379' },
      { name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'redis', key: 'password' } } },
    ]),
  };
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: '705ab4f5-6393-11e8-b7cc-42010a800002',
      kind: { group: 'ray.io', version: 'v1', kind: 'RayCluster' },
      resource: { group: 'ray.io', version: 'v1', resource: 'rayclusters' },
      requestKind: { group: 'ray.io', version: 'v1', kind: 'RayCluster' },
      requestResource: { group: 'ray.io', version: 'v1', resource: 'rayclusters' },
      name: 'raycluster-external-redis',
      namespace: 'ray',
      operation: 'CREATE',
      userInfo: { username: 'admin', uid: '014fbff9a07c', groups: ['system:authenticated', 'my-admin-group'] },
      object,
      oldObject: null,
      dryRun: false,
      options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' },
    },
  };
}

// ---- child process: one server --------------------------------------------------------------------

async function serve(kind: string, certDir: string): Promise<void> {
  const certFile = join(certDir, 'tls.crt');
  const keyFile = join(certDir, 'tls.key');
  let close: () => Promise<unknown>;
  let port: number;
  if (kind === 'webhook') {
    const { buildApp } = await import('../webhook/app.ts');
    // Production settings: default logger at LOG_LEVEL (info: one line per patched admission).
    const app = await buildApp({ certFile, keyFile, finalizerEnabled: true });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as { port: number }).port;
    close = () => app.close();
  } else {
    const { readFileSync } = await import('node:fs');
    const { default: Fastify } = await import('fastify');
    const app = Fastify({ https: { cert: readFileSync(certFile), key: readFileSync(keyFile), minVersion: 'TLSv1.2' } });
    const fixed = { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: '705ab4f5-6393-11e8-b7cc-42010a800002', allowed: true } };
    app.post(BARE_PATH, async () => fixed);
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as { port: number }).port;
    close = () => app.close();
  }
  process.send?.({ port });
  process.on('message', (m: { cpu?: boolean }) => {
    if (m.cpu) process.send?.({ cpuMicros: ((u) => u.user + u.system)(process.cpuUsage()) });
  });
  process.on('disconnect', () => void close().then(() => process.exit(0)));
}

// ---- parent: load -----------------------------------------------------------------------------------

interface Server {
  kind: 'webhook' | 'bare';
  child: ChildProcess;
  url: string;
}

/** Latencies (ms) of 2xx answers, count, failures, wall time and server CPU of one autocannon run. */
interface Sample {
  latencies: Float64Array;
  count: number;
  failures: number;
  seconds: number;
  cpuMicros: number;
}

async function startServer(kind: 'webhook' | 'bare', certDir: string, body: string): Promise<Server> {
  const child = fork(THIS_FILE, ['--serve', kind, certDir], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    env: { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' },
  });
  const port = await new Promise<number>((ok, fail) => {
    child.once('message', (m: { port: number }) => ok(m.port));
    child.once('exit', (code) => fail(new Error(`${kind} server exited with ${code}`)));
  });
  const server: Server = { kind, child, url: `https://127.0.0.1:${port}${kind === 'webhook' ? MUTATE_RAYCLUSTER_PATH : BARE_PATH}` };
  await sanityCheck(server, body);
  return server;
}

function stopServer(child: ChildProcess): Promise<void> {
  return new Promise((ok) => {
    if (child.exitCode !== null || child.signalCode !== null) return ok();
    child.once('exit', () => ok());
    child.disconnect();
    setTimeout(() => child.kill('SIGKILL'), 5000).unref();
  });
}

/** One request before the load: the webhook must answer with a patch, or the figures measure an error path. */
async function sanityCheck(server: Server, body: string): Promise<void> {
  const answer = await new Promise<{ status: number; text: string }>((ok, fail) => {
    const req = httpsRequest(server.url, { method: 'POST', rejectUnauthorized: false, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => ok({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', fail);
    req.end(body);
  });
  if (answer.status !== 200) throw new Error(`${server.kind}: sanity request got HTTP ${answer.status}: ${answer.text}`);
  if (server.kind === 'webhook' && !answer.text.includes('"patchType":"JSONPatch"')) throw new Error(`webhook did not patch the sample: ${answer.text}`);
}

function serverCpu(child: ChildProcess): Promise<number> {
  return new Promise((ok) => {
    const onMessage = (m: { cpuMicros?: number }) => {
      if (m.cpuMicros === undefined) return;
      child.off('message', onMessage);
      ok(m.cpuMicros);
    };
    child.on('message', onMessage);
    child.send({ cpu: true });
  });
}

async function load(server: Server, body: string, connections: number, durationSeconds: number): Promise<Sample> {
  let latencies = new Float64Array(1 << 15);
  let count = 0;
  const cpuBefore = await serverCpu(server.child);
  const started = process.hrtime.bigint();
  let instance!: autocannon.Instance;
  const done = new Promise<autocannon.Result>((ok, fail) => {
    instance = autocannon(
      { url: server.url, method: 'POST', headers: { 'content-type': 'application/json' }, body, connections, pipelining: 1, duration: durationSeconds },
      (err, result) => (err ? fail(err) : ok(result)),
    );
  });
  // autocannon's own histogram has whole-millisecond resolution; keep every latency to report microseconds.
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTimeMs: number) => {
    if (statusCode < 200 || statusCode > 299) return;
    if (count === latencies.length) {
      const bigger = new Float64Array(latencies.length * 2);
      bigger.set(latencies);
      latencies = bigger;
    }
    latencies[count++] = responseTimeMs;
  });
  const result = await done;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpuMicros = (await serverCpu(server.child)) - cpuBefore;
  return { latencies: latencies.subarray(0, count), count, failures: result.errors + result.timeouts + result.non2xx, seconds, cpuMicros };
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

function summarize(samples: Sample[]): RouteFigures {
  const count = samples.reduce((n, s) => n + s.count, 0);
  const all = new Float64Array(count);
  let at = 0;
  for (const s of samples) {
    all.set(s.latencies, at);
    at += s.count;
  }
  all.sort();
  const seconds = samples.reduce((n, s) => n + s.seconds, 0);
  return {
    requestsPerSecond: Math.round(count / seconds),
    p50Micros: Math.round(percentile(all, 50) * 1000),
    p99Micros: Math.round(percentile(all, 99) * 1000),
    cpuMicrosPerRequest: count === 0 ? 0 : Math.round(samples.reduce((n, s) => n + s.cpuMicros, 0) / count),
    requests: count,
    failures: samples.reduce((n, s) => n + s.failures, 0),
  };
}

export function formatFigures(f: WebhookBenchFigures): string {
  const rows: Array<[string, RouteFigures]> = [
    ['bare Fastify HTTPS, fixed AdmissionReview', f.bare],
    [`raykeeper ${MUTATE_RAYCLUSTER_PATH}`, f.webhook],
  ];
  const w = Math.max(...rows.map(([n]) => n.length));
  const cols = ['req/s', 'p50 µs', 'p99 µs', 'CPU µs/req', 'failed'];
  const cell = (v: string | number, i: number) => String(v).padStart(Math.max(7, cols[i]!.length));
  return [
    `webhook: HTTPS, ${f.connections} keep-alive connections, ${f.durationSeconds} s per route in ${f.rounds} alternating rounds (after warm-up)`,
    `${'route'.padEnd(w)}  ${cols.map(cell).join('  ')}`,
    ...rows.map(([n, r]) => `${n.padEnd(w)}  ${[r.requestsPerSecond, r.p50Micros, r.p99Micros, r.cpuMicrosPerRequest, r.failures].map(cell).join('  ')}`),
    `throughput ratio raykeeper/bare: ${f.throughputRatio.toFixed(2)} (target >= 0.85); raykeeper p99 ${(f.webhook.p99Micros / 1000).toFixed(2)} ms (target < 5 ms)`,
  ].join('\n');
}

export async function runWebhookBench(options: WebhookBenchOptions = {}): Promise<WebhookBenchFigures> {
  const o: Required<WebhookBenchOptions> = { connections: 32, durationSeconds: 12, rounds: 8, warmupSeconds: 1.5, print: true, ...options };
  const certDir = mkdtempSync(join(tmpdir(), 'raykeeper-bench-'));
  const servers: Server[] = [];
  try {
    await writeBundle(certDir, generateCertificates({ service: 'raykeeper-webhook', namespace: 'bench', ips: ['127.0.0.1'] }));
    const body = JSON.stringify(sampleReview());
    const webhook = await startServer('webhook', certDir, body);
    servers.push(webhook);
    const bare = await startServer('bare', certDir, body);
    servers.push(bare);
    for (const server of servers) await load(server, body, o.connections, o.warmupSeconds);
    const samples: Record<Server['kind'], Sample[]> = { webhook: [], bare: [] };
    const window = o.durationSeconds / o.rounds;
    for (let round = 0; round < o.rounds; round++) {
      for (const server of round % 2 === 0 ? [webhook, bare] : [bare, webhook]) {
        samples[server.kind].push(await load(server, body, o.connections, window));
      }
    }
    const w = summarize(samples.webhook);
    const b = summarize(samples.bare);
    const figures: WebhookBenchFigures = {
      connections: o.connections,
      durationSeconds: o.durationSeconds,
      rounds: o.rounds,
      webhook: w,
      bare: b,
      throughputRatio: b.requestsPerSecond === 0 ? 0 : w.requestsPerSecond / b.requestsPerSecond,
    };
    if (o.print) process.stdout.write(formatFigures(figures) + '\n');
    return figures;
  } finally {
    await Promise.all(servers.map((s) => stopServer(s.child)));
    rmSync(certDir, { recursive: true, force: true });
  }
}

if (resolve(process.argv[1] ?? '') === THIS_FILE) {
  if (process.argv[2] === '--serve') await serve(process.argv[3] ?? '', process.argv[4] ?? '');
  else await runWebhookBench();
}
