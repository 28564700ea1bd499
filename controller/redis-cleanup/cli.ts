// `raykeeper redis-cleanup`: the cleanup Job's entry. Reads the environment KubeRay gives the Job's
// container (RAY_REDIS_ADDRESS, REDIS_PASSWORD, REDIS_USERNAME, RAY_external_storage_namespace and the
// RAY_REDIS_* TLS files); flags override each. Exit 0 when the namespace is gone (also when it never
// existed), 1 with a one-line reason when it could not be removed, 2 for a usage or configuration error.
// A password is never accepted as a flag value and never printed.
import { parseArgs } from 'node:util';
import { argumentProblem } from '../../bin/args.ts';
import { oneLine, errorMessage } from '../../src/errors.ts';
import { formatNamespaceTable, type NamespaceSummary } from '../../src/redis/keys.ts';
import type { RedisConnectionOptions } from './connect.ts';
import type { Orphan } from '../../src/gcsft/orphans.ts';
import { formatHostPort } from '../../src/redis/address.ts';
import { RAY_RELEASE } from '../../src/ray-release.ts';
import { cleanupDetail, DEFAULT_DEADLINE_MS, runCleanup, summarize, type Layout } from './cleanup.ts';
import { ConfigError, processEnvBytes, requireNamespace, resolveSettings, type FlagValues, type Settings } from './config.ts';
import { DEFAULT_CONNECT_BUDGET_MS } from './retry.ts';
import { autoSweep, SWEEP_MODES, type SweepDecision, type SweepMode } from '../../src/redis/sweep.ts';
import { DEFAULT_COMMAND_BUDGET_MS, parseCommandBudget } from '../../src/redis/budget.ts';

const NAME = 'raykeeper redis-cleanup';

export const USAGE = `Usage: raykeeper redis-cleanup [options]

Deletes one Ray GCS storage namespace from Redis: the hashes RAY<ns>@<TABLE> (and the counter
RAY<ns>@JobCounter) of current Ray, and the single hash <ns> of older Ray when every field is <ns>@...
Keys that merely look alike (other types, foreign fields, other namespaces) are left alone and reported.
Checks every command it needs before deleting anything, unlinks the tables Ray is known to write first,
then, unless the version the namespace's head recorded is one whose tables are all known (--sweep
auto, the default), sweeps the whole keyspace with SCAN (never KEYS) for the rest.
Retries connection failures with backoff until --timeout, but gives up after --connect-budget when
Redis cannot be reached at all.

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
  --sweep MODE            always: after the known tables, walk the keyspace with SCAN for
                          tables not on the list; never: skip the walk (complete for Ray <= ${RAY_RELEASE},
                          whose tables are all on the list); auto (default): never when --ray-version is
                          <= ${RAY_RELEASE}, else always; without --ray-version, from the version the
                          namespace's head recorded (ray_version of CLUSTER_METADATA in RAY<ns>@KV;
                          always when it is newer, absent or unreadable). The cleanup Job gets never,
                          always or auto from the controller, which reads the RayCluster's rayVersion
                          and head image tag
  --ray-version V         the Ray version that wrote the namespace, for --sweep auto
  --timeout SECONDS       total time including retries (default ${DEFAULT_DEADLINE_MS / 1000}; the Job's deadline is 300)
  --connect-budget SECONDS
                          give up when Redis cannot be reached at all (refused, no route, no such
                          name, connect timeout) for this long (default ${DEFAULT_CONNECT_BUDGET_MS / 1000}, as Ray's cleanup); a Redis
                          that accepts connections but is slow keeps the whole --timeout
  --command-budget-ms MS  the most server time one command of the sweep (and of --list) may take, a
                          pipeline of them counted as one (default ${DEFAULT_COMMAND_BUDGET_MS}): SCAN COUNT and the keys
                          per pipeline adapt to it, measured with INFO commandstats (without +info:
                          the round trip). Smaller: a shared Redis answers its other clients sooner,
                          the sweep takes longer
  --scan-count N          fixed SCAN COUNT (default: adapted to --command-budget-ms)
  --dry-run               report what would be deleted; delete nothing
  --list                  list the Ray storage namespaces present, with key counts and sizes
  --legacy                with --list: also find old-layout namespaces (probes every hash: slower)
  --orphans               with --list: mark the namespaces no RayCluster names (in any namespace of the
                          Kubernetes cluster, read from the API with the kubeconfig)
  --kubeconfig FILE       with --orphans (default: KUBECONFIG, ~/.kube/config, then in-cluster)
  --json                  machine-readable result on stdout
  --quiet                 no progress or retry lines on stderr
  -v, --verbose           also how the cleanup went about it on stderr (sweep decision, SCAN calls)
  -h, --help              this text

Minimal ACL for the cleanup: +scan +type +unlink +hscan, plus +info for --mode auto (without it a
standalone Redis is assumed) and for the sweep's exact server time (without it: the round trip);
Redis Cluster also needs +cluster|slots +cluster|info. --list also uses
+hlen and +memory|usage when allowed (sizes are reported as unknown otherwise).
Keys: ~* (or ~RAY* with --layout current, which skips the old layout's hash <ns>). --sweep never
needs no +scan.
`;

export interface CliIo {
  env: Record<string, string | undefined>;
  /** A variable's raw bytes, when env is this process's own environment (see processEnvBytes). */
  envBytes?: ((name: string) => Buffer | undefined) | undefined;
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
}

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
  sweep: { type: 'string' },
  'ray-version': { type: 'string' },
  timeout: { type: 'string' },
  'connect-budget': { type: 'string' },
  'scan-count': { type: 'string' },
  'command-budget-ms': { type: 'string' },
  'dry-run': { type: 'boolean' },
  list: { type: 'boolean' },
  legacy: { type: 'boolean' },
  orphans: { type: 'boolean' },
  kubeconfig: { type: 'string' },
  json: { type: 'boolean' },
  quiet: { type: 'boolean' },
  verbose: { type: 'boolean', short: 'v' },
  help: { type: 'boolean', short: 'h' },
} as const;

function positiveNumber(raw: string, flag: string): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new ConfigError(`${flag} must be a positive number, got ${JSON.stringify(raw)}`);
  return n;
}

/** The entry registered in bin/cli.ts. */
export async function run(argv: string[]): Promise<number> {
  return runWith(argv, { env: process.env, envBytes: (name) => processEnvBytes(name), stdout: process.stdout, stderr: process.stderr });
}

export async function runWith(argv: string[], io: CliIo): Promise<number> {
  let parsed: Settings;
  let values: FlagValues;
  try {
    try {
      ({ values } = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: false }));
    } catch (err) {
      throw new ConfigError(`${argumentProblem(err)} (see ${NAME} --help)`);
    }
    if (values.help) {
      io.stdout.write(USAGE);
      return 0;
    }
    parsed = await resolveSettings(values, io.env, io.envBytes);
  } catch (err) {
    if (err instanceof ConfigError) {
      io.stderr.write(`${NAME}: ${oneLine(err.message)}\n`);
      return 2;
    }
    throw err;
  }
  const { connection } = parsed;
  const secrets = [parsed.password];
  const say = (line: string) => io.stderr.write(`${NAME}: ${oneLine(line, secrets, 1000)}\n`);
  const quiet = values.quiet === true;
  const json = values.json === true;
  for (const w of parsed.warnings) say(`warning: ${w}`);

  let deadlineMs = DEFAULT_DEADLINE_MS;
  let connectBudgetMs = DEFAULT_CONNECT_BUDGET_MS;
  let scanCount: number | undefined;
  let commandBudgetMs = DEFAULT_COMMAND_BUDGET_MS;
  let layout: Layout = 'both';
  let sweep: SweepDecision;
  try {
    if (typeof values.timeout === 'string') deadlineMs = Math.round(positiveNumber(values.timeout, '--timeout') * 1000);
    if (typeof values['connect-budget'] === 'string')
      connectBudgetMs = Math.round(positiveNumber(values['connect-budget'], '--connect-budget') * 1000);
    if (typeof values['scan-count'] === 'string') scanCount = Math.round(positiveNumber(values['scan-count'], '--scan-count'));
    if (typeof values['command-budget-ms'] === 'string') {
      const budget = parseCommandBudget(values['command-budget-ms']);
      if ('problem' in budget) throw new ConfigError(`--command-budget-ms ${budget.problem}`);
      commandBudgetMs = budget.ms;
    }
    if (typeof values.layout === 'string') {
      if (!['both', 'current', 'legacy'].includes(values.layout)) throw new ConfigError('--layout must be both, current or legacy');
      layout = values.layout as Layout;
    }
    if (values.legacy && !values.list) throw new ConfigError('--legacy goes with --list');
    if (values.orphans && !values.list) throw new ConfigError('--orphans goes with --list');
    if (typeof values.kubeconfig === 'string' && !values.orphans) throw new ConfigError('--kubeconfig goes with --orphans');
    sweep = sweepFrom(typeof values.sweep === 'string' ? values.sweep : 'auto', values['ray-version']);
  } catch (err) {
    if (err instanceof ConfigError) {
      say(err.message);
      return 2;
    }
    throw err;
  }
  const onRetry = quiet
    ? undefined
    : (r: { attempt: number; delayMs: number; reason: string }) => say(`retry ${r.attempt} in ${r.delayMs} ms: ${r.reason}`);

  if (values.list) {
    try {
      // Loaded only for --list: the cleanup Job's start-up reads no more source than it runs.
      const { listNamespaces } = await import('./list.ts');
      const result = await listNamespaces({
        connection,
        legacy: values.legacy === true,
        scanCount,
        commandBudgetMs,
        deadlineMs,
        connectBudgetMs,
        onRetry,
      });
      for (const w of result.warnings) say(`warning: ${w}`);
      if (!values.orphans) {
        if (json) io.stdout.write(JSON.stringify({ ok: true, ...result }) + '\n');
        else io.stdout.write(`${result.target}\n${formatNamespaceTable(result.namespaces)}\n`);
        return 0;
      }
      const { orphans, unknown } = await orphansOf(
        result.namespaces,
        connection,
        typeof values.kubeconfig === 'string' ? values.kubeconfig : undefined,
      );
      if (unknown.length > 0)
        say(
          `warning: the storage namespace of ${unknown.length} RayCluster(s) cannot be read (${unknown.slice(0, 3).join(', ')}): one of the orphans may be theirs`,
        );
      const names = orphans.map((o) => o.namespace);
      if (json) io.stdout.write(JSON.stringify({ ok: true, ...result, orphans: names, unknownOwners: unknown }) + '\n');
      else
        io.stdout.write(
          `${result.target}\n${formatNamespaceTable(result.namespaces, new Set(names))}\n${names.length} orphaned namespace(s): no RayCluster names them\n`,
        );
      return 0;
    } catch (err) {
      if (err instanceof ConfigError) {
        say(err.message);
        return 2;
      }
      return failed(err, io, json, secrets);
    }
  }

  let namespace: string;
  try {
    namespace = requireNamespace(parsed);
  } catch (err) {
    say(errorMessage(err));
    return 2;
  }
  let lastProgress = Date.now();
  const onProgress = quiet
    ? undefined
    : (p: { node: string; scanCalls: number; matched: number; deleted: number; elapsedMs: number }) => {
        if (Date.now() - lastProgress < 2000) return;
        lastProgress = Date.now();
        say(
          `progress: ${p.node}: ${p.scanCalls} SCAN calls, ${p.matched} matching keys, ${p.deleted} deleted, ${(p.elapsedMs / 1000).toFixed(1)} s`,
        );
      };
  try {
    const result = await runCleanup({
      connection,
      namespace,
      dryRun: values['dry-run'] === true,
      layout,
      sweep,
      scanCount,
      commandBudgetMs,
      deadlineMs,
      connectBudgetMs,
      onRetry,
      onProgress,
    });
    for (const w of result.warnings) say(`warning: ${w}`);
    if (values.verbose === true) {
      const d = cleanupDetail(result);
      const pace = d.pace
        ? `, longest ${d.pace.longestMs.toFixed(2)} ms of server time per command (budget ${d.pace.budgetMs}, by ${d.pace.measure}), last COUNT ${d.pace.scanCount}`
        : '';
      say(`detail: sweep ${d.sweep} (${d.sweepReason}), ${d.scanCalls} SCAN calls${pace}, old layout ${d.legacy}`);
    }
    if (json) {
      io.stdout.write(oneLine(JSON.stringify({ ok: true, ...result }), secrets, Number.MAX_SAFE_INTEGER) + '\n');
    } else {
      const details: string[] = [];
      if (result.dryRun) for (const k of result.deleted) details.push(`would delete ${k.key} (${k.type})`);
      for (const k of result.leftAlone) details.push(`left alone ${k.key} (${k.type}): ${k.reason ?? ''}`);
      if (result.leftAloneCount > result.leftAlone.length)
        details.push(`... and ${result.leftAloneCount - result.leftAlone.length} more left alone`);
      const lines = [oneLine(summarize(result), secrets, 2000), ...details.map((l) => `  ${oneLine(l, secrets, 2000)}`)];
      io.stdout.write(lines.join('\n') + '\n');
    }
    return 0;
  } catch (err) {
    return failed(err, io, json, secrets);
  }
}

/**
 * Which listed namespaces no RayCluster names: every RayCluster of the cluster the kubeconfig reaches,
 * its references resolved with the caller's permissions (src/gcsft/orphans.ts decides).
 */
async function orphansOf(
  namespaces: NamespaceSummary[],
  connection: RedisConnectionOptions,
  kubeconfig: string | undefined,
): Promise<{ orphans: Orphan[]; unknown: string[] }> {
  const [{ loadKubeConfig }, { KubeClient }, { clusterOwners, listAllClusters }, { findOrphans, unknownOwners }] = await Promise.all([
    import('../../kube/kubeconfig.ts'),
    import('../../kube/client.ts'),
    import('../gcsft-orphans/owners.ts'),
    import('../../src/gcsft/orphans.ts'),
  ]);
  let kube;
  try {
    kube = new KubeClient(loadKubeConfig(kubeconfig, { configured: true }));
  } catch (err) {
    throw new ConfigError(`--orphans reads the RayClusters from Kubernetes: ${errorMessage(err)}`);
  }
  try {
    const owners = await clusterOwners(kube, await listAllClusters(kube), undefined);
    return { orphans: findOrphans(formatHostPort(connection.host, connection.port), namespaces, owners), unknown: unknownOwners(owners) };
  } finally {
    kube.close();
  }
}

function sweepFrom(mode: string, rayVersion: string | boolean | undefined): SweepDecision {
  if (!(SWEEP_MODES as readonly string[]).includes(mode)) throw new ConfigError(`--sweep must be one of ${SWEEP_MODES.join(', ')}`);
  if (typeof rayVersion === 'string' && mode !== 'auto') throw new ConfigError('--ray-version goes with --sweep auto');
  if ((mode as SweepMode) === 'auto') return autoSweep([{ from: '--ray-version', version: rayVersion }]);
  return { mode: mode as 'always' | 'never', reason: `--sweep ${mode}` };
}

function failed(err: unknown, io: CliIo, json: boolean, secrets: (string | undefined)[]): number {
  const reason = oneLine(errorMessage(err), secrets);
  if (json) io.stdout.write(JSON.stringify({ ok: false, error: reason }) + '\n');
  io.stderr.write(`${NAME}: failed: ${reason}\n`);
  return 1;
}
