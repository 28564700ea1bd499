// Shared set-up for webhook tests: certificates on disk, a silent or capturing logger, HTTPS requests.
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { generateCertificates, type CertificateBundle } from '../../certs/generate.ts';
import { writeBundle } from '../../certs/files.ts';
import type { Logger } from '../../kube/logger.ts';

export interface CertDir {
  dir: string;
  certFile: string;
  keyFile: string;
  bundle: CertificateBundle;
}

/** A CA and a serving certificate for 127.0.0.1/localhost written to a fresh directory, removed at teardown. */
export async function certDir(t: { teardown: (fn: () => void) => void }): Promise<CertDir> {
  const dir = mkdtempSync(join(tmpdir(), 'raykeeper-webhook-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const bundle = generateCertificates({
    service: 'raykeeper-webhook',
    namespace: 'raykeeper',
    ips: ['127.0.0.1'],
    dnsNames: ['localhost'],
  });
  const paths = await writeBundle(dir, bundle);
  return { dir, certFile: paths.cert, keyFile: paths.key, bundle };
}

/** A pino logger that keeps its JSON lines in memory. */
export function capturingLogger(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(String(chunk));
      cb();
    },
  });
  const logger = pino({ level: 'debug' }, stream);
  return {
    logger,
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

export interface HttpsAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** POST (or GET) over a new TLS connection, verifying the server against `ca`. */
export function httpsCall(
  port: number,
  path: string,
  options: { ca: string; body?: string; method?: string; headers?: Record<string, string>; servername?: string },
): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
        ca: options.ca,
        agent: false,
        headers: options.body === undefined ? options.headers : { 'content-type': 'application/json', ...options.headers },
        ...(options.servername === undefined ? {} : { servername: options.servername }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

export function decodePatch(patch: unknown): Array<{ op: string; path: string; value?: unknown }> {
  if (typeof patch !== 'string') throw new Error(`no patch: ${JSON.stringify(patch)}`);
  return JSON.parse(Buffer.from(patch, 'base64').toString('utf8'));
}
