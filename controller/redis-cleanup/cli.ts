// `raykeeper redis-cleanup`: the cleanup Job's entry. Reads the environment KubeRay gives the Job's
// container (RAY_REDIS_ADDRESS, REDIS_PASSWORD, REDIS_USERNAME, RAY_external_storage_namespace and the
// RAY_REDIS_* TLS files); flags override each. Exit 0 when the namespace is gone (also when it never
// existed), 1 with a one-line reason when it could not be removed, 2 for a usage or configuration error.
// A password is never accepted as a flag value and never printed.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AddressError, parseRedisAddress, resolveCredentials } from '../../src/redis/address.ts';
import { oneLine, errorMessage } from '../../src/redis/errors.ts';
import { MODE_CHOICES, type ModeChoice } from '../../src/redis/topology.ts';
import { formatNamespaceTable } from '../../src/redis/keys.ts';
import { ENV_REDIS_ADDRESS, ENV_REDIS_PASSWORD, ENV_REDIS_USERNAME, ENV_STORAGE_NAMESPACE } from '../../src/names.ts';
import { storageNamespaceProblem } from '../../src/gcsft.ts';
import type { RedisConnectionOptions, TlsMaterial } from './connect.ts';
import { DEFAULT_DEADLINE_MS, DEFAULT_SCAN_COUNT, runCleanup, summarize, type Layout } from './cleanup.ts';
import { listNamespaces } from './list.ts';

const NAME = 'raykeeper redis-cleanup';

export const USAGE = `Usage: raykeeper redis-cleanup [options]

Deletes one Ray GCS storage namespace from Redis: the hashes RAY<ns>@<TABLE> (and the counter
RAY<ns>@JobCounter) of current Ray, and the single hash <ns> of older Ray when every field is <ns>@...
Keys that merely look alike (other types, foreign fields, other namespaces) are left alone and reported.
Uses SCAN (never KEYS) and UNLINK; retries connection failures with backoff until --timeout.

Environment (as KubeRay's cleanup Job provides it; flags override):
  RAY_REDIS_ADDRESS               host:port, [ipv6]:port, redis://[user:pass@]host:port or rediss://...
                                  (first entry of a comma-separated list)
  RAY_external_storage_namespace  the namespace to delete
  REDIS_USERNAME, REDIS_PASSWORD  credentials (win over those in the URL)
  RAY_REDIS_CA_CERT               CA certificate file (PEM) to verify the server (TLS)
  RAY_REDIS_CA_PATH               directory of CA certificate files (PEM)
  RAY_REDIS_CLIENT_CERT           client certificate file (PEM) for mutual TLS
  RAY_REDIS_CLIENT_KEY            client key file (PEM)
  RAY_REDIS_SERVER_NAME           TLS server name (SNI and certificate check)

Options:
  --address ADDR          Redis address (overrides RAY_REDIS_ADDRESS)
  --namespace NS          storage namespace (overrides RAY_external_storage_namespace)
  --username USER         ACL user (overrides REDIS_USERNAME)
  --password-env NAME     read the password from environment variable NAME instead of REDIS_PASSWORD
  --password-file PATH    read the password from a file (e.g. a mounted Secret)
                          (there is deliberately no --password: argv is visible in ps)
  --tls                   use TLS even when the address is not rediss://
  --ca-cert PATH, --ca-path DIR, --client-cert PATH, --client-key PATH, --server-name NAME
                          override the RAY_REDIS_* TLS settings
  --mode MODE             auto (default: ask the server, as Ray does), standalone, sentinel, cluster
  --sentinel-master NAME  master group when the Sentinel monitors several
  --layout L              both (default), current (RAY<ns>@*), legacy (hash <ns>)
  --timeout SECONDS       total time including retries (default ${DEFAULT_DEADLINE_MS / 1000}; the Job's deadline is 300)
  --scan-count N          SCAN COUNT hint (default ${DEFAULT_SCAN_COUNT})
  --dry-run               report what would be deleted; delete nothing
  --list                  list the Ray storage namespaces present, with key counts and sizes
  --legacy                with --list: also find old-layout namespaces (probes every hash: slower)
  --json                  machine-readable result on stdout
  --quiet                 no progress or retry lines on stderr
  -h, --help              this text

Minimal ACL for the cleanup: +scan +type +unlink +hscan, plus +info for --mode auto (without it a
standalone Redis is assumed); Redis Cluster also needs +cluster|slots +cluster|info. --list also uses
+hlen and +memory|usage when allowed (sizes are reported as unknown otherwise).
Keys: ~* (or ~RAY* with --layout current, which skips the old layout's hash <ns>).
`;

export interface CliIo {
  env: Record<string, string | undefined>;
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
}

class UsageError extends Error {}

const OPTIONS = {
  address: { type: 'string' },
  namespace: { type: 'string' },
  username: { type: 'string' },
  'password-env': { type: 'string' },
  'password-file': { type: 'string' },
  tls: { type: 'boolean' },
  'ca-cert': { type: 'string' },
  'ca-path': { type: 'string' },
  'client-cert': { type: 'string' },
  'client-key': { type: 'string' },
  'server-name': { type: 'string' },
  mode: { type: 'string' },
  'sentinel-master': { type: 'string' },
  layout: { type: 'string' },
  timeout: { type: 'string' },
  'scan-count': { type: 'string' },
  'dry-run': { type: 'boolean' },
  list: { type: 'boolean' },
  legacy: { type: 'boolean' },
  json: { type: 'boolean' },
  quiet: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** A PEM given inline, or the file it names (Ray's RAY_REDIS_* variables are file paths). */
async function pemFrom(value: string, what: string): Promise<string> {
  if (value.includes('-----BEGIN ')) return value;
  try {
    return await readFile(value, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${what} ${JSON.stringify(value)}: ${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}`);
  }
}

async function caDirectory(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    throw new UsageError(`cannot read CA directory ${JSON.stringify(dir)}: ${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}`);
  }
  const out: string[] = [];
  for (const name of names.sort()) {
    const path = join(dir, name);
    const info = await stat(path).catch(() => undefined);
    if (!info?.isFile()) continue;
    const text = await readFile(path, 'utf8').catch(() => '');
    if (text.includes('-----BEGIN CERTIFICATE-----')) out.push(text);
  }
  if (out.length === 0) throw new UsageError(`CA directory ${JSON.stringify(dir)} holds no PEM certificate`);
  return out;
}

function positiveNumber(raw: string, flag: string): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${flag} must be a positive number, got ${JSON.stringify(raw)}`);
  return n;
}

interface Parsed {
  connection: RedisConnectionOptions;
  namespace?: string | undefined;
  password?: string | undefined;
  values: Record<string, string | boolean | undefined>;
  warnings: string[];
}

async function configure(argv: string[], env: CliIo['env']): Promise<Parsed> {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (err) {
    throw new UsageError(errorMessage(err));
  }
  if (values.help) return { connection: { host: '', port: 0, tls: false }, values, warnings: [] };
  const str = (flag: string, envName?: string): string | undefined => {
    const v = values[flag];
    if (typeof v === 'string') return v;
    return envName === undefined ? undefined : env[envName];
  };
  const warnings: string[] = [];
  const rawAddress = str('address', ENV_REDIS_ADDRESS);
  if (rawAddress === undefined || rawAddress.trim() === '') throw new UsageError(`no Redis address: set ${ENV_REDIS_ADDRESS} or --address`);
  let address;
  try {
    address = parseRedisAddress(rawAddress);
  } catch (err) {
    if (err instanceof AddressError) throw new UsageError(err.message);
    throw err;
  }
  warnings.push(...address.warnings);

  let flagPassword: string | undefined;
  const passwordEnv = values['password-env'];
  if (typeof passwordEnv === 'string') {
    flagPassword = env[passwordEnv];
    if (flagPassword === undefined) throw new UsageError(`--password-env: environment variable ${JSON.stringify(passwordEnv)} is not set`);
  }
  const passwordFile = values['password-file'];
  if (typeof passwordFile === 'string') {
    if (flagPassword !== undefined) throw new UsageError('--password-env and --password-file are exclusive');
    try {
      flagPassword = (await readFile(passwordFile, 'utf8')).replace(/\r?\n$/, '');
    } catch (err) {
      throw new UsageError(`cannot read --password-file ${JSON.stringify(passwordFile)}: ${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}`);
    }
  }
  const creds = resolveCredentials(address, {
    flagUsername: typeof values.username === 'string' ? values.username : undefined,
    flagPassword,
    envUsername: env[ENV_REDIS_USERNAME],
    envPassword: env[ENV_REDIS_PASSWORD],
  });
  if (creds.username !== undefined && creds.password === undefined) {
    warnings.push(`username ${JSON.stringify(creds.username)} given without a password: connecting without AUTH`);
  }

  const tls = address.tls || values.tls === true;
  const material: TlsMaterial = {};
  const caCert = str('ca-cert', 'RAY_REDIS_CA_CERT');
  const caPath = str('ca-path', 'RAY_REDIS_CA_PATH');
  const clientCert = str('client-cert', 'RAY_REDIS_CLIENT_CERT');
  const clientKey = str('client-key', 'RAY_REDIS_CLIENT_KEY');
  const serverName = str('server-name', 'RAY_REDIS_SERVER_NAME');
  const anyTls = [caCert, caPath, clientCert, clientKey, serverName].some((v) => v !== undefined && v !== '');
  if (tls) {
    const ca: string[] = [];
    if (caCert) ca.push(await pemFrom(caCert, 'CA certificate'));
    if (caPath) ca.push(...(await caDirectory(caPath)));
    if (ca.length > 0) material.ca = ca;
    if (clientCert) material.cert = await pemFrom(clientCert, 'client certificate');
    if (clientKey) material.key = await pemFrom(clientKey, 'client key');
    if ((material.cert === undefined) !== (material.key === undefined)) throw new UsageError('a client certificate needs its key, and a key its certificate');
    if (serverName) material.servername = serverName;
  } else if (anyTls) {
    warnings.push('TLS settings are present but the address is not rediss://: TLS is off (use --tls to force it)');
  }

  const mode = (typeof values.mode === 'string' ? values.mode : 'auto') as ModeChoice;
  if (!MODE_CHOICES.includes(mode)) throw new UsageError(`--mode must be one of ${MODE_CHOICES.join(', ')}`);
  const connection: RedisConnectionOptions = {
    host: address.host,
    port: address.port,
    tls,
    tlsMaterial: tls ? material : undefined,
    username: creds.username,
    password: creds.password,
    mode,
    sentinelMaster: typeof values['sentinel-master'] === 'string' ? values['sentinel-master'] : undefined,
  };
  return { connection, namespace: str('namespace', ENV_STORAGE_NAMESPACE), password: creds.password, values, warnings };
}

/** The entry registered in bin/cli.ts. */
export async function run(argv: string[]): Promise<number> {
  return runWith(argv, { env: process.env, stdout: process.stdout, stderr: process.stderr });
}

export async function runWith(argv: string[], io: CliIo): Promise<number> {
  let parsed: Parsed;
  try {
    parsed = await configure(argv, io.env);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`${NAME}: ${oneLine(err.message)}\n`);
      return 2;
    }
    throw err;
  }
  const { values, connection } = parsed;
  if (values.help) {
    io.stdout.write(USAGE);
    return 0;
  }
  const secrets = [parsed.password];
  const say = (line: string) => io.stderr.write(`${NAME}: ${oneLine(line, secrets, 1000)}\n`);
  const quiet = values.quiet === true;
  const json = values.json === true;
  for (const w of parsed.warnings) say(`warning: ${w}`);

  let deadlineMs = DEFAULT_DEADLINE_MS;
  let scanCount = DEFAULT_SCAN_COUNT;
  let layout: Layout = 'both';
  try {
    if (typeof values.timeout === 'string') deadlineMs = Math.round(positiveNumber(values.timeout, '--timeout') * 1000);
    if (typeof values['scan-count'] === 'string') scanCount = Math.round(positiveNumber(values['scan-count'], '--scan-count'));
    if (typeof values.layout === 'string') {
      if (!['both', 'current', 'legacy'].includes(values.layout)) throw new UsageError('--layout must be both, current or legacy');
      layout = values.layout as Layout;
    }
    if (values.legacy && !values.list) throw new UsageError('--legacy goes with --list');
  } catch (err) {
    if (err instanceof UsageError) {
      say(err.message);
      return 2;
    }
    throw err;
  }
  const onRetry = quiet ? undefined : (r: { attempt: number; delayMs: number; reason: string }) => say(`retry ${r.attempt} in ${r.delayMs} ms: ${r.reason}`);

  if (values.list) {
    try {
      const result = await listNamespaces({ connection, legacy: values.legacy === true, scanCount, deadlineMs, onRetry });
      for (const w of result.warnings) say(`warning: ${w}`);
      if (json) io.stdout.write(JSON.stringify({ ok: true, ...result }) + '\n');
      else io.stdout.write(`${result.target}\n${formatNamespaceTable(result.namespaces)}\n`);
      return 0;
    } catch (err) {
      return failed(err, io, json, secrets);
    }
  }

  const namespace = parsed.namespace;
  const problem = namespace === undefined ? `no storage namespace: set ${ENV_STORAGE_NAMESPACE} or --namespace` : storageNamespaceProblem(namespace);
  if (problem !== undefined || namespace === undefined) {
    say(problem ?? 'no storage namespace');
    return 2;
  }
  let lastProgress = Date.now();
  const onProgress = quiet
    ? undefined
    : (p: { node: string; scanCalls: number; matched: number; deleted: number; elapsedMs: number }) => {
        if (Date.now() - lastProgress < 2000) return;
        lastProgress = Date.now();
        say(`progress: ${p.node}: ${p.scanCalls} SCAN calls, ${p.matched} matching keys, ${p.deleted} deleted, ${(p.elapsedMs / 1000).toFixed(1)} s`);
      };
  try {
    const result = await runCleanup({ connection, namespace, dryRun: values['dry-run'] === true, layout, scanCount, deadlineMs, onRetry, onProgress });
    for (const w of result.warnings) say(`warning: ${w}`);
    if (json) {
      io.stdout.write(oneLine(JSON.stringify({ ok: true, ...result }), secrets, Number.MAX_SAFE_INTEGER) + '\n');
    } else {
      const details: string[] = [];
      if (result.dryRun) for (const k of result.deleted) details.push(`would delete ${k.key} (${k.type})`);
      for (const k of result.leftAlone) details.push(`left alone ${k.key} (${k.type}): ${k.reason ?? ''}`);
      if (result.leftAloneCount > result.leftAlone.length) details.push(`... and ${result.leftAloneCount - result.leftAlone.length} more left alone`);
      const lines = [oneLine(summarize(result), secrets, 2000), ...details.map((l) => `  ${oneLine(l, secrets, 2000)}`)];
      io.stdout.write(lines.join('\n') + '\n');
    }
    return 0;
  } catch (err) {
    return failed(err, io, json, secrets);
  }
}

function failed(err: unknown, io: CliIo, json: boolean, secrets: (string | undefined)[]): number {
  const reason = oneLine(errorMessage(err), secrets);
  if (json) io.stdout.write(JSON.stringify({ ok: false, error: reason }) + '\n');
  io.stderr.write(`${NAME}: failed: ${reason}\n`);
  return 1;
}
