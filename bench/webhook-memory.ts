// Webhook memory under the worst allowed load: the real `raykeeper webhook` process (production
// defaults and the manifest's NODE_OPTIONS) receives, from many keep-alive connections at once,
// AdmissionReviews exactly at the body limit made of the densest JSON it accepts (as many empty objects as
// the container cap allows: ~64 heap bytes per 3 bytes of JSON; the rest numbers). Reported: the process's peak
// RSS (VmHWM) beside its idle RSS in the same run and the memory limit of the Deployment
// (manifests/base/webhook-deployment.yaml). A short run (~2 x 8 s).
//
//   npm run bench -- webhook-memory
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { generateCertificates } from '../certs/generate.ts';
import { writeBundle } from '../certs/files.ts';
import { MUTATE_RAYCLUSTER_PATH } from '../src/names.ts';
import { DEFAULT_BODY_LIMIT } from '../webhook/app.ts';
import { jsonContainerCount, MAX_JSON_CONTAINERS } from '../webhook/budget.ts';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const BIN = join(ROOT, 'bin', 'raykeeper.js');
const DEPLOYMENT = join(ROOT, 'manifests', 'base', 'webhook-deployment.yaml');
const MiB = 1024 * 1024;

export interface WebhookMemoryFigures {
  bodyBytes: number;
  connections: number[];
  idleRssMiB: number;
  /** Per connection count: peak RSS (VmHWM) of the process, answers by status. */
  rounds: Array<{ connections: number; peakRssMiB: number; answers: Record<string, number>; failures: number }>;
  limitMiB: number;
  nodeOptions: string;
}

interface WebhookContainer {
  name: string;
  env?: Array<{ name: string; value?: string }>;
  resources?: { limits?: { memory?: string } };
}

function webhookContainer(): WebhookContainer {
  for (const doc of parseAllDocuments(readFileSync(DEPLOYMENT, 'utf8'))) {
    const spec = doc.toJS() as { kind?: string; spec?: { template?: { spec?: { containers?: WebhookContainer[] } } } } | null;
    const container = spec?.kind === 'Deployment' ? spec.spec?.template?.spec?.containers?.find((c) => c.name === 'webhook') : undefined;
    if (container !== undefined) return container;
  }
  throw new Error(`no webhook container in ${DEPLOYMENT}`);
}

/** The webhook container's memory limit in MiB, from the manifest. */
export function deploymentMemoryLimitMiB(): number {
  const limit = webhookContainer().resources?.limits?.memory ?? '';
  const m = /^(\d+)(Mi|Gi)$/.exec(limit);
  if (!m) throw new Error(`cannot read the webhook memory limit ${JSON.stringify(limit)} in ${DEPLOYMENT}`);
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
}

/** NODE_OPTIONS of the webhook container in the manifest (the process runs with the same V8 settings). */
export function deploymentNodeOptions(): string {
  return webhookContainer().env?.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '';
}

/**
 * An AdmissionReview of exactly `bytes` bytes costing the most heap the webhook lets in: as many empty
 * objects as it accepts (MAX_JSON_CONTAINERS, ~60 heap bytes per 3 bytes of JSON), the rest doubles
 * (~24 heap bytes per 4 bytes). With `containers` above the cap it is the refused kind.
 */
export function worstCaseReview(bytes: number, containers = MAX_JSON_CONTAINERS): string {
  const review = (objects: string, numbers: string) =>
    `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"m","kind":{"group":"ray.io","version":"v1","kind":"RayCluster"},` +
    `"operation":"CREATE","object":{"apiVersion":"ray.io/v1","kind":"RayCluster","metadata":{"name":"m","annotations":{"ray.io/ft-enabled":"true"}},` +
    `"spec":{"objects":[${objects}],"numbers":[${numbers}],"pad":"PAD"}}}}`;
  const envelope = review('', '');
  const skeleton = jsonContainerCount(envelope);
  const objects = Array(Math.max(0, containers - skeleton))
    .fill('{}')
    .join(',');
  const room = bytes - envelope.length - objects.length;
  const numbers = Array(Math.max(0, Math.floor(room / 4) - 1))
    .fill('1.5')
    .join(',');
  let body = review(objects, numbers);
  body = body.replace('PAD', 'x'.repeat(bytes - body.length + 'PAD'.length));
  if (Buffer.byteLength(body) !== bytes || jsonContainerCount(body) !== Math.max(containers, skeleton))
    throw new Error('filler arithmetic');
  return body;
}

function statusMiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : 0;
}

async function startWebhook(certDir: string): Promise<{ child: ChildProcess; port: number }> {
  // Production settings: LOG_LEVEL info (refusals are logged at warn).
  const child = spawn(
    process.execPath,
    [BIN, 'webhook', '--cert', join(certDir, 'tls.crt'), '--key', join(certDir, 'tls.key'), '--host', '127.0.0.1', '--port', '0'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, LOG_LEVEL: 'info', NODE_OPTIONS: deploymentNodeOptions() },
    },
  );
  const port = await new Promise<number>((ok, fail) => {
    let out = '';
    const onData = (c: Buffer) => {
      out += c.toString();
      const m = /"port":(\d+),"msg":"admission webhook listening/.exec(out);
      if (m) {
        child.stdout!.off('data', onData);
        child.stdout!.resume(); // keep draining the log
        ok(Number(m[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => fail(new Error(`webhook exited early (${code}): ${out}`)));
  });
  return { child, port };
}

/** `connections` clients posting `body` back to back for `seconds`; answers counted by HTTP status. */
async function hammer(
  port: number,
  body: string,
  connections: number,
  seconds: number,
): Promise<{ answers: Record<string, number>; failures: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections, rejectUnauthorized: false });
  const answers: Record<string, number> = {};
  let failures = 0;
  const until = Date.now() + seconds * 1000;
  const one = () =>
    new Promise<void>((ok) => {
      const req = httpsRequest(
        {
          host: '127.0.0.1',
          port,
          path: MUTATE_RAYCLUSTER_PATH,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            answers[res.statusCode ?? 0] = (answers[res.statusCode ?? 0] ?? 0) + 1;
            ok();
          });
        },
      );
      req.on('error', () => {
        failures++;
        ok();
      });
      req.end(body);
    });
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (Date.now() < until) await one();
    }),
  );
  agent.destroy();
  return { answers, failures };
}

export function formatMemory(f: WebhookMemoryFigures): string {
  return [
    `webhook-memory: the webhook process, bodies of ${(f.bodyBytes / MiB).toFixed(2)} MiB (the limit) of the densest JSON it accepts (${MAX_JSON_CONTAINERS} empty objects, the rest numbers), back to back`,
    `idle RSS ${f.idleRssMiB} MiB; Deployment memory limit ${f.limitMiB} MiB; NODE_OPTIONS ${JSON.stringify(f.nodeOptions)} (from the manifest)`,
    ...f.rounds.map(
      (r) =>
        `${String(r.connections).padStart(3)} connections: peak RSS ${r.peakRssMiB} MiB (${Math.round((100 * r.peakRssMiB) / f.limitMiB)}% of the limit); ` +
        `answers ${Object.entries(r.answers)
          .map(([s, n]) => `${s}: ${n}`)
          .join(', ')}; failed ${r.failures}`,
    ),
  ].join('\n');
}

export async function runWebhookMemoryBench(
  options: { connections?: number[]; seconds?: number; print?: boolean } = {},
): Promise<WebhookMemoryFigures> {
  const connections = options.connections ?? [4, 32];
  const seconds = options.seconds ?? 8;
  const certDir = mkdtempSync(join(tmpdir(), 'raykeeper-bench-mem-'));
  const body = worstCaseReview(DEFAULT_BODY_LIMIT);
  const figures: WebhookMemoryFigures = {
    bodyBytes: DEFAULT_BODY_LIMIT,
    connections,
    idleRssMiB: 0,
    rounds: [],
    limitMiB: deploymentMemoryLimitMiB(),
    nodeOptions: deploymentNodeOptions(),
  };
  try {
    await writeBundle(certDir, generateCertificates({ service: 'raykeeper-webhook', namespace: 'bench', ips: ['127.0.0.1'] }));
    for (const n of connections) {
      // A fresh process per round: VmHWM is the peak of this load alone.
      const { child, port } = await startWebhook(certDir);
      try {
        figures.idleRssMiB = Math.max(figures.idleRssMiB, statusMiB(child.pid!, 'VmRSS'));
        const { answers, failures } = await hammer(port, body, n, seconds);
        figures.rounds.push({ connections: n, peakRssMiB: statusMiB(child.pid!, 'VmHWM'), answers, failures });
      } finally {
        child.kill('SIGTERM');
        await new Promise((ok) => child.once('exit', ok));
      }
    }
    if (options.print ?? true) process.stdout.write(formatMemory(figures) + '\n');
    return figures;
  } finally {
    rmSync(certDir, { recursive: true, force: true });
  }
}

if (resolve(process.argv[1] ?? '') === fileURLToPath(import.meta.url)) await runWebhookMemoryBench();
