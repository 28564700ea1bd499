// Webhook benchmark: HTTPS throughput and latency of the RayCluster mutate route, and of the validating
// route (the same app in a process of its own), under 32 keep-alive connections, beside baselines answering a fixed AdmissionReview on the same machine in the same run:
// a bare Fastify HTTPS route (the framework line, goal: webhook >= 0.95x its req/s, p99 within 1.1x), a
// bare Fastify route sending the webhook's own patched answer as fixed text (same bytes out, sent the same
// way), a second bare Fastify route identical to the first (the control: how far apart two identical
// servers measure in the same run, so a ratio's distance from the goal can be read against the bench's
// own spread), and a bare node:https server (the Node floor). Three reviews are sent (ReviewShape), two of
// them recorded from a real kube-apiserver (bench/reviews.ts). Each server runs in its own child process
// with the same TLS settings and the same V8 heap settings (the webhook Deployment's NODE_OPTIONS);
// autocannon drives them from this one.
// A run is split into short alternating rounds (the order rotates) so that other load on the machine hits
// all alike; after each window the bench waits for the server just measured to be idle (settle). A run's
// ratios are the medians of its rounds' ratios, and several runs give the spread. ~8 min in total.
//
//   node bench/webhook.ts                            (standalone)
//   import { runWebhookBench } from './webhook.ts'   (bench/run.ts)
import { median, percentile } from './stats.ts';
import { benchClusterSpec } from './sample-cluster.ts';
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { generateCertificates } from '../certs/generate.ts';
import { writeBundle } from '../certs/files.ts';
import { MUTATE_RAYCLUSTER_PATH, VALIDATE_RAYCLUSTER_PATH } from '../src/names.ts';
import type { AdmissionReviewAnswer } from '../src/admission/response.ts';
import { sleep } from '../kube/backoff.ts';
import { RECORDED_REVIEWS, recordedReview, type RecordedShape } from './reviews.ts';
import { deploymentNodeOptions } from './webhook-memory.ts';

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

/**
 * `fastify` answers the minimal allowed review (the issue's framework line); `fastifyPatched` answers, as
 * fixed text sent the way the webhook sends it (synchronous handler, no serializer), the webhook's own
 * answer to each review: same bytes out the same way, so the gap from it to the webhook is our code (less
 * what our plain JSON.parse saves over Fastify's default body parser, which both bare routes use).
 */
export type ServerKind = 'webhook' | 'validate' | 'fastify' | 'fastifyControl' | 'fastifyPatched' | 'node';
const KINDS: readonly ServerKind[] = ['webhook', 'validate', 'fastify', 'fastifyControl', 'fastifyPatched', 'node'];

export interface RunFigures {
  webhook: RouteFigures;
  /** The same webhook app (its own process), the validating route: the review validated, allowed. */
  validate: RouteFigures;
  fastify: RouteFigures;
  /** The same bare Fastify server again: the control. */
  fastifyControl: RouteFigures;
  fastifyPatched: RouteFigures;
  node: RouteFigures;
  /** webhook / bare Fastify req/s: the median over the run's rounds of the two servers' ratio in that round. Goal >= 0.95. */
  vsFastify: number;
  /** webhook / bare Fastify answering the webhook's answer, the same way. */
  vsFastifyPatched: number;
  /** webhook / bare node:https req/s, the same way. */
  vsNode: number;
  /** webhook p99 / bare Fastify p99, the median of the rounds' ratios. Goal <= 1.1. */
  p99VsFastify: number;
  /** The validating route / bare Fastify, req/s and p99, the same way. Goals >= 0.95 and <= 1.1. */
  validateVsFastify: number;
  validateP99VsFastify: number;
  /** The control / bare Fastify req/s and p99, the same way: 1.00 for a bench without noise. */
  controlVsFastify: number;
  controlP99VsFastify: number;
}

/**
 * The reviews sent: `kubectl-apply` and `kubectl-create`, byte for byte what kube-apiserver v1.35 sent our
 * webhook for `kubectl apply` of our sample like KubeRay's ray-cluster.external-redis.yaml (3.7 KB) and
 * `kubectl create` of its annotation form (2.2 KB), managedFields included (bench/reviews.ts); and
 * `hand-built`: a RayCluster without managedFields and with a one-line last-applied-configuration
 * (2.3 KB). kube-apiserver always adds managedFields, so no real review looks like it; it is kept because
 * the bench measured with it before the recordings existed, and with fewer parsed objects per request
 * against our fixed cost it was expected to be the hardest for the ratio.
 */
export type ReviewShape = RecordedShape | 'hand-built';
const REVIEW_SHAPES: readonly ReviewShape[] = [...RECORDED_REVIEWS.map((r) => r.shape), 'hand-built'];

function reviewBody(shape: ReviewShape): string {
  return shape === 'hand-built' ? JSON.stringify(handBuiltReview()) : recordedReview(shape);
}

export interface ReviewFigures {
  shape: ReviewShape;
  bytes: number;
  runs: RunFigures[];
}

export interface WebhookBenchFigures {
  connections: number;
  /** Measured seconds per server in each run of each review (sum of its rounds). */
  durationSeconds: number;
  rounds: number;
  reviews: ReviewFigures[];
  /** 1-minute load average before and after. */
  loadBefore: number;
  loadAfter: number;
}

export interface WebhookBenchOptions {
  connections?: number;
  /** Measured seconds per server per run and review, split into `rounds` alternating windows. Default 8 s in 4 rounds. */
  durationSeconds?: number;
  rounds?: number;
  /** Runs (each a full alternation); the spread across them is reported. Default 3. */
  runs?: number;
  warmupSeconds?: number;
  /** Print the table (default true). */
  print?: boolean;
}

const THIS_FILE = fileURLToPath(import.meta.url);
const BARE_PATH = '/mutate';

/** The `hand-built` review: a RayCluster CREATE with GCS FT by annotation, head and one worker group. */
export function handBuiltReview(): object {
  const manifest = {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: {
      name: 'raycluster-external-redis',
      namespace: 'ray',
      annotations: { 'ray.io/ft-enabled': 'true' },
      labels: { app: 'ray', team: 'ml' },
    },
    spec: benchClusterSpec([
      { name: 'RAY_REDIS_ADDRESS', value: 'redis.ray.svc:6379' },
      { name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'redis', key: 'password' } } },
    ]),
  };
  const lastApplied = '{"apiVersion":"ray.io/v1","kind":"RayCluster"}';
  const object = {
    ...manifest,
    metadata: {
      ...manifest.metadata,
      annotations: { ...manifest.metadata.annotations, 'kubectl.kubernetes.io/last-applied-configuration': lastApplied },
    },
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
  if (kind === 'webhook' || kind === 'validate') {
    const { buildApp } = await import('../webhook/app.ts');
    // Production settings: default logger at LOG_LEVEL (info; patches are logged at debug).
    const app = await buildApp({ certFile, keyFile, finalizerEnabled: true });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as { port: number }).port;
    close = () => app.close();
  } else {
    const { loadTlsMaterial, secureContextOptions } = await import('../webhook/tls.ts');
    const tls = secureContextOptions(await loadTlsMaterial(certFile, keyFile)); // the webhook's TLS settings
    const fixed = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: '705ab4f5-6393-11e8-b7cc-42010a800002', allowed: true },
    };
    if (kind === 'fastify' || kind === 'fastifyControl' || kind === 'fastifyPatched') {
      const { default: Fastify } = await import('fastify');
      const app = Fastify({ https: tls });
      if (kind !== 'fastifyPatched') {
        app.post(BARE_PATH, async () => fixed);
      } else {
        // Sent the way the webhook sends its answers: a synchronous handler writing the JSON text. One
        // route per review: the webhook's answers differ (uid, where the namespace is pinned).
        const { ANSWER_CONTENT_TYPE, answerJson } = await import('../src/admission/response.ts');
        for (const shape of REVIEW_SHAPES) {
          const text = answerJson(await webhookAnswer(shape));
          app.post(patchedPath(shape), (_request, reply) => {
            void reply.header('content-type', ANSWER_CONTENT_TYPE).send(text);
          });
        }
      }
      await app.listen({ host: '127.0.0.1', port: 0 });
      port = (app.server.address() as { port: number }).port;
      close = () => app.close();
    } else {
      // The Node floor: read the body, answer the fixed review.
      const { createServer } = await import('node:https');
      const answer = JSON.stringify(fixed);
      const server = createServer(tls, (req, res) => {
        req.on('data', () => {});
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(answer) });
          res.end(answer);
        });
      });
      await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
      port = (server.address() as { port: number }).port;
      close = () => new Promise((ok) => server.close(ok));
    }
  }
  process.send?.({ port });
  process.on('message', (m: { cpu?: boolean }) => {
    if (m.cpu) process.send?.({ cpuMicros: ((u) => u.user + u.system)(process.cpuUsage()) });
  });
  process.on('disconnect', () => void close().then(() => process.exit(0)));
}

/** The webhook's answer to a review (its patch holds a storage namespace of the usual length). */
async function webhookAnswer(shape: ReviewShape): Promise<AdmissionReviewAnswer> {
  const { mutate } = await import('../src/admission/mutate.ts');
  const options = { newStorageNamespace: () => '01b62a22-f03c-4c65-ba96-4838a0822683', finalizerEnabled: true };
  const outcome = mutate(JSON.parse(reviewBody(shape)), 'RayCluster', options);
  if (outcome.patch.length === 0) throw new Error(`the ${shape} review got no patch`);
  return outcome.answer;
}

const patchedPath = (shape: ReviewShape) => `${BARE_PATH}/${shape}`;

const nodeOptions = () => [process.env.NODE_OPTIONS, deploymentNodeOptions()].filter(Boolean).join(' ');

// ---- parent: load -----------------------------------------------------------------------------------

interface Server {
  kind: ServerKind;
  child: ChildProcess;
  /** Where to send each review. */
  url: (shape: ReviewShape) => string;
  /** Bytes of its answer to each review. */
  answerBytes: number[];
}

/** Latencies (ms) of 2xx answers, count, failures, wall time and server CPU of one autocannon run. */
interface Sample {
  latencies: Float64Array;
  count: number;
  failures: number;
  seconds: number;
  cpuMicros: number;
}

interface Review {
  shape: ReviewShape;
  body: string;
}

async function startServer(kind: ServerKind, certDir: string, reviews: Review[]): Promise<Server> {
  const child = fork(THIS_FILE, ['--serve', kind, certDir], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    // Every server with the webhook Deployment's V8 heap settings (after any the bench itself was given).
    env: { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', NODE_OPTIONS: nodeOptions() },
  });
  const port = await new Promise<number>((ok, fail) => {
    child.once('message', (m: { port: number }) => ok(m.port));
    child.once('exit', (code) => fail(new Error(`${kind} server exited with ${code}`)));
  });
  const path = (shape: ReviewShape) =>
    kind === 'webhook'
      ? MUTATE_RAYCLUSTER_PATH
      : kind === 'validate'
        ? VALIDATE_RAYCLUSTER_PATH
        : kind === 'fastifyPatched'
          ? patchedPath(shape)
          : BARE_PATH;
  const server: Server = { kind, child, url: (shape) => `https://127.0.0.1:${port}${path(shape)}`, answerBytes: [] };
  for (const review of reviews) server.answerBytes.push(await sanityCheck(server, review));
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

/**
 * One request before the load: the webhook must answer with a patch, or the figures measure an error path.
 * Returns the answer's length.
 */
async function sanityCheck(server: Server, { shape, body }: Review): Promise<number> {
  const answer = await new Promise<{ status: number; text: string }>((ok, fail) => {
    const req = httpsRequest(
      server.url(shape),
      { method: 'POST', rejectUnauthorized: false, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => ok({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', fail);
    req.end(body);
  });
  if (answer.status !== 200) throw new Error(`${server.kind}: sanity request got HTTP ${answer.status}: ${answer.text}`);
  if (server.kind === 'webhook' && !answer.text.includes('"patchType":"JSONPatch"'))
    throw new Error(`webhook did not patch the ${shape} review: ${answer.text}`);
  if (server.kind === 'validate' && !answer.text.includes('"allowed":true'))
    throw new Error(`the validating route did not allow the ${shape} review: ${answer.text}`);
  return Buffer.byteLength(answer.text);
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

async function load(server: Server, { shape, body }: Review, connections: number, durationSeconds: number): Promise<Sample> {
  let latencies = new Float64Array(1 << 15);
  let count = 0;
  const cpuBefore = await serverCpu(server.child);
  const started = process.hrtime.bigint();
  let instance!: autocannon.Instance;
  const done = new Promise<autocannon.Result>((ok, fail) => {
    instance = autocannon(
      {
        url: server.url(shape),
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        connections,
        pipelining: 1,
        duration: durationSeconds,
      },
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

/**
 * A ratio of two servers measured back to back in the same rounds: the median of the per-round ratios.
 * Both windows of a round see nearly the same machine, so a burst of outside load that hits one window
 * moves one round's ratio, not the run's figure (a ratio of sums would carry it).
 */
function pairedRatio(a: Sample[], b: Sample[], figure: (s: Sample) => number): number {
  const ratios: number[] = [];
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const denominator = figure(b[i]!);
    if (denominator > 0) ratios.push(figure(a[i]!) / denominator);
  }
  return ratios.length === 0 ? 0 : median(ratios);
}

const roundRate = (s: Sample) => (s.seconds > 0 ? s.count / s.seconds : 0);
const roundP99 = (s: Sample) => percentile(Float64Array.from(s.latencies).sort(), 99);

function spread(values: number[], digits = 0): string {
  const f = (v: number) => v.toFixed(digits);
  return values.length === 0 ? '-' : `${f(Math.min(...values))}-${f(Math.max(...values))}`;
}

export function formatFigures(f: WebhookBenchFigures): string {
  const names: Record<ServerKind, string> = {
    node: 'bare node:https, fixed AdmissionReview (the Node floor)',
    fastify: 'bare Fastify HTTPS, fixed AdmissionReview',
    fastifyControl: 'the same bare Fastify again (control)',
    fastifyPatched: "bare Fastify HTTPS, the webhook's answer as fixed text",
    webhook: `raykeeper ${MUTATE_RAYCLUSTER_PATH}`,
    validate: `raykeeper ${VALIDATE_RAYCLUSTER_PATH}`,
  };
  const w = Math.max(...Object.values(names).map((n) => n.length));
  const cols = ['req/s', 'p50 µs', 'p99 µs', 'CPU µs/req', 'failed'];
  const cell = (v: string | number, i: number) => String(v).padStart(Math.max(11, cols[i]!.length));
  const lines = [
    `webhook: HTTPS, ${f.connections} keep-alive connections; per review ${f.reviews[0]?.runs.length ?? 0} runs of ${f.durationSeconds} s per server in ${f.rounds} alternating rounds; ` +
      `load average ${f.loadBefore.toFixed(1)} before, ${f.loadAfter.toFixed(1)} after (2 cores shared: ratios count, absolute numbers are context); ` +
      `every server runs with NODE_OPTIONS ${JSON.stringify(nodeOptions())} (the webhook Deployment's)`,
  ];
  for (const review of f.reviews) {
    const rows = (['node', 'fastify', 'fastifyControl', 'fastifyPatched', 'webhook', 'validate'] as const).map((k) => {
      const r = review.runs.map((run) => run[k]);
      return `${names[k].padEnd(w)}  ${[
        spread(r.map((x) => x.requestsPerSecond)),
        spread(r.map((x) => x.p50Micros)),
        spread(r.map((x) => x.p99Micros)),
        spread(r.map((x) => x.cpuMicrosPerRequest)),
        r.reduce((n, x) => n + x.failures, 0),
      ]
        .map(cell)
        .join('  ')}`;
    });
    const runs = review.runs;
    lines.push(
      `review "${review.shape}" (${(review.bytes / 1024).toFixed(1)} KB)`,
      `${'server (min-max over runs)'.padEnd(w)}  ${cols.map(cell).join('  ')}`,
      ...rows,
      `  req/s ratio raykeeper/bare Fastify per run (median of its rounds): ${runs.map((r) => r.vsFastify.toFixed(2)).join(', ')} (goal >= 0.95)`,
      `  p99 ratio raykeeper/bare Fastify per run (median of its rounds): ${runs.map((r) => r.p99VsFastify.toFixed(2)).join(', ')} (goal <= 1.10)`,
      `  validating route: req/s ratio raykeeper/bare Fastify per run: ${runs.map((r) => r.validateVsFastify.toFixed(2)).join(', ')} (goal >= 0.95), p99 ratio ${runs.map((r) => r.validateP99VsFastify.toFixed(2)).join(', ')} (goal <= 1.10)`,
      `  control: the same bare Fastify again / bare Fastify per run, req/s ${runs.map((r) => r.controlVsFastify.toFixed(2)).join(', ')}, p99 ${runs.map((r) => r.controlP99VsFastify.toFixed(2)).join(', ')} (identical servers: the bench's own spread)`,
      `  req/s ratio raykeeper/bare Fastify with the same answer per run: ${runs.map((r) => r.vsFastifyPatched.toFixed(2)).join(', ')} (sent as text the same way: our code, less our cheaper body parsing)`,
      `  req/s ratio raykeeper/bare node:https per run (median of its rounds): ${runs.map((r) => r.vsNode.toFixed(2)).join(', ')}`,
      `  server CPU per request, raykeeper minus bare Fastify, per run: ${runs.map((r) => `${r.webhook.cpuMicrosPerRequest - r.fastify.cpuMicrosPerRequest} µs`).join(', ')} (the least load-sensitive figure)`,
    );
  }
  return lines.join('\n');
}

/**
 * Waits until a server just measured has finished what its load left it (closing 32 TLS connections,
 * collecting garbage): at most 2 s, until it uses under 5% of a core. Without this the next server's
 * window likely shared the 2 cores with that tail: the bare Fastify server measured next to the webhook
 * in the rotation read a few percent low against its identical control (up to 15% in a run).
 */
async function settle(server: Server): Promise<void> {
  let before = await serverCpu(server.child);
  for (let waited = 0; waited < 2000; waited += 100) {
    await sleep(100);
    const now = await serverCpu(server.child);
    if (now - before < 5_000) return;
    before = now;
  }
}

/** One review's runs: every run alternates the servers in rounds, the order rotating. */
async function measureReview(servers: Server[], review: Review, o: Required<WebhookBenchOptions>): Promise<RunFigures[]> {
  const window = o.durationSeconds / o.rounds;
  const runs: RunFigures[] = [];
  for (let run = 0; run < o.runs; run++) {
    const samples: Record<ServerKind, Sample[]> = {
      webhook: [],
      validate: [],
      fastify: [],
      fastifyControl: [],
      fastifyPatched: [],
      node: [],
    };
    for (let round = 0; round < o.rounds; round++) {
      const shift = (round + run) % servers.length;
      const order = [...servers.slice(shift), ...servers.slice(0, shift)];
      for (const server of round % 2 === 0 ? order : order.reverse()) {
        samples[server.kind].push(await load(server, review, o.connections, window));
        await settle(server);
      }
    }
    runs.push({
      webhook: summarize(samples.webhook),
      validate: summarize(samples.validate),
      fastify: summarize(samples.fastify),
      fastifyControl: summarize(samples.fastifyControl),
      fastifyPatched: summarize(samples.fastifyPatched),
      node: summarize(samples.node),
      vsFastify: pairedRatio(samples.webhook, samples.fastify, roundRate),
      vsFastifyPatched: pairedRatio(samples.webhook, samples.fastifyPatched, roundRate),
      vsNode: pairedRatio(samples.webhook, samples.node, roundRate),
      p99VsFastify: pairedRatio(samples.webhook, samples.fastify, roundP99),
      validateVsFastify: pairedRatio(samples.validate, samples.fastify, roundRate),
      validateP99VsFastify: pairedRatio(samples.validate, samples.fastify, roundP99),
      controlVsFastify: pairedRatio(samples.fastifyControl, samples.fastify, roundRate),
      controlP99VsFastify: pairedRatio(samples.fastifyControl, samples.fastify, roundP99),
    });
  }
  return runs;
}

export async function runWebhookBench(options: WebhookBenchOptions = {}): Promise<WebhookBenchFigures> {
  const o: Required<WebhookBenchOptions> = {
    connections: 32,
    durationSeconds: 8,
    rounds: 4,
    runs: 3,
    warmupSeconds: 1.5,
    print: true,
    ...options,
  };
  const certDir = mkdtempSync(join(tmpdir(), 'raykeeper-bench-'));
  const servers: Server[] = [];
  const loadBefore = loadavg()[0]!;
  try {
    await writeBundle(certDir, generateCertificates({ service: 'raykeeper-webhook', namespace: 'bench', ips: ['127.0.0.1'] }));
    const reviews: Review[] = REVIEW_SHAPES.map((shape) => ({ shape, body: reviewBody(shape) }));
    for (const kind of KINDS) servers.push(await startServer(kind, certDir, reviews));
    const sizes = (kind: ServerKind) => servers.find((s) => s.kind === kind)!.answerBytes.join(', ');
    if (sizes('webhook') !== sizes('fastifyPatched'))
      throw new Error(`the webhook answered ${sizes('webhook')} bytes, the same-answer baseline ${sizes('fastifyPatched')}`);
    // Every server sees every review before anything is measured, so no figure depends on which came first.
    for (const review of reviews) for (const server of servers) await load(server, review, o.connections, o.warmupSeconds);
    const measured: ReviewFigures[] = [];
    for (const review of reviews)
      measured.push({ shape: review.shape, bytes: Buffer.byteLength(review.body), runs: await measureReview(servers, review, o) });
    const figures: WebhookBenchFigures = {
      connections: o.connections,
      durationSeconds: o.durationSeconds,
      rounds: o.rounds,
      reviews: measured,
      loadBefore,
      loadAfter: loadavg()[0]!,
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
