// `raykeeper uninstall`: what must happen before raykeeper's objects are deleted, so no RayCluster keeps a
// finalizer nobody removes (./run.ts does it; src/uninstall/decide.ts decides). Helm's pre-delete hook runs
// it (charts/raykeeper/templates/uninstall-hook.yaml); kustomize users run it before `kubectl delete -k`.
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { errorMessage } from '../../src/errors.ts';
import { createLogger } from '../../kube/logger.ts';
import { GCS_FT_REDIS_CLEANUP_FINALIZER } from '../../src/names.ts';
import { uninstallExitCode, type UninstallReport } from '../../src/uninstall/decide.ts';
import { EVENT_FINALIZER_RELEASED_FOR_UNINSTALL } from '../../src/event-reasons.ts';
import { argumentProblem, usageError } from '../../bin/args.ts';
import { cleanupFlagOptions } from './settings.ts';
import { gcsFtCleanupModule } from '../gcsft-cleanup/module.ts';

export const DEFAULT_NAMESPACE = 'raykeeper-system';
export const DEFAULT_CONTROLLER_DEPLOYMENT = 'raykeeper-controller';
export const DEFAULT_WEBHOOK_CONFIGURATION = 'raykeeper';
export const DEFAULT_TIMEOUT_SECONDS = 240;

const OPTIONS = {
  kubeconfig: { type: 'string' },
  namespace: { type: 'string' },
  'watch-namespace': { type: 'string' },
  'controller-deployment': { type: 'string' },
  'webhook-configuration': { type: 'string' },
  timeout: { type: 'string' },
  workers: { type: 'string' },
  'dry-run': { type: 'boolean' },
  'added-back-ok': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsOptionsConfig;

export function uninstallUsage(): string {
  const cleanupFlags = Object.entries(gcsFtCleanupModule.flags ?? {})
    .map(([flag, f]) => `  --${flag}${f.type === 'string' ? ' VALUE' : ''}`)
    .join('\n');
  return `Usage: raykeeper uninstall [options]

Run before raykeeper's objects are deleted (Helm's pre-delete hook runs it; with kustomize run it, then
kubectl delete -k ... --ignore-not-found), so that no RayCluster keeps ${GCS_FT_REDIS_CLEANUP_FINALIZER}
with nobody left to remove it:
  1. stops what adds the finalizer: deletes the Mutating- and ValidatingWebhookConfiguration, scales the
     controller Deployment to 0 and waits (a quarter of --timeout, 60 s at most) for its pods to go;
  2. each RayCluster in scope that carries the finalizer:
     - being deleted: its Redis cleanup is finished as the controller would (its pods deleted, the
       cleanup Job, the controller's Events), with the controller's own settings read from its Deployment;
     - live: the finalizer is removed and its GCS data stays in Redis; a Warning
       ${EVENT_FINALIZER_RELEASED_FOR_UNINSTALL} on it names the storage namespace, the Redis and the command
       to delete it by hand;
  3. lists again until a pass finds nothing to do. A cleanup still running near --timeout is given up:
     its finalizer is removed with a Warning FinalizerReleasedForUninstall naming what may remain;
  4. each RayJob whose status raykeeper stored as jobDeploymentStatus "New" gets "" (KubeRay's New; raykeeper
     reads both), the rest of its status kept, so KubeRay's operator can start it (Event RayJobStatusNewCleared);
     raykeeper's ray.io/rayjob-finalizer (one KubeRay's operator wrote is left) is removed, so deleting the
     RayJob does not hang (Warning ${EVENT_FINALIZER_RELEASED_FOR_UNINSTALL}: its Ray job on a selected cluster is not stopped).
Every step tolerates having been done before: run it again after a partial run.

Options:
  --kubeconfig FILE               kubeconfig (default: KUBECONFIG, ~/.kube/config, then in-cluster)
  --namespace NS                  where raykeeper runs (default: POD_NAMESPACE, else ${DEFAULT_NAMESPACE})
  --watch-namespace NS            the RayClusters of this namespace only (default: the controller's
                                  --watch-namespace, read from its Deployment; without one, all namespaces)
  --controller-deployment NAME    the controller Deployment in --namespace (default ${DEFAULT_CONTROLLER_DEPLOYMENT}; "" to leave it)
  --webhook-configuration NAME    the Mutating- and ValidatingWebhookConfiguration (default ${DEFAULT_WEBHOOK_CONFIGURATION}; "" to leave them)
  --timeout SECONDS               the whole run (default ${DEFAULT_TIMEOUT_SECONDS}; Helm waits 300 s for its hook by default)
  --workers N                     clusters being deleted whose cleanup runs at once (default 4)
  --dry-run                       say what would be done; change nothing
  --added-back-ok                 a finalizer another operator added back (waited for 3 s) exits 0, not 3
                                  (still reported; Helm's hook passes it: nothing is stuck then)
  -h, --help                      this text
The controller's cleanup options (default: the controller Deployment's own; see raykeeper controller --help):
${cleanupFlags}

Exit status: 0 no RayCluster in scope carries the finalizer any more (each cleaned, or released with an
Event saying what stays), or a dry run; 1 some still carry it or a step failed (listed; run it again);
2 bad arguments; 3 every finalizer removed, but some were added back (another operator adds them:
KubeRay with its own cleanup on holds them then; 0 with --added-back-ok).
`;
}

function positive(raw: string | undefined, flag: string, fallback: number, integer = false): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n)))
    throw new Error(`--${flag} must be a positive ${integer ? 'integer' : 'number'}, got ${JSON.stringify(raw)}`);
  return n;
}

function summary(report: UninstallReport, code: number): string {
  const count = (o: string) => report.clusters.filter((c) => c.outcome === o).length;
  const lines = report.clusters.map((c) => `  ${c.key}  ${c.outcome}  ${c.detail}`);
  const jobs = [
    ...(report.rayJobsReset.length > 0 ? [`RayJobs whose "New" became "": ${report.rayJobsReset.join(', ')}`] : []),
    ...(report.rayJobsReleased.length > 0
      ? [`RayJobs whose ray.io/rayjob-finalizer was removed: ${report.rayJobsReleased.join(', ')}`]
      : []),
  ];
  const parts = [
    `${count('finished')} cleaned up as the controller would`,
    `${count('released')} live, released with their data kept`,
    `${count('released-at-deadline')} released at the deadline`,
    `${count('readded')} added back by another operator`,
    `${count('stuck')} still stuck`,
  ];
  const dry = count('would-release') + count('would-finish');
  return [
    ...(lines.length > 0 ? ['RayClusters:', ...lines] : ['no RayCluster in scope carries the finalizer']),
    ...jobs,
    ...report.errors.map((e) => `error: ${e}`),
    dry > 0 || report.clusters.length === 0 ? `dry run or nothing to do: exit ${code}` : `${parts.join(', ')}: exit ${code}`,
  ].join('\n');
}

export async function run(argv: string[]): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: argv, options: { ...OPTIONS, ...cleanupFlagOptions() }, strict: true, allowPositionals: false }) as {
      values: Record<string, string | boolean | undefined>;
    });
  } catch (err) {
    process.stderr.write(usageError('raykeeper uninstall', argumentProblem(err)));
    return 2;
  }
  if (values.help) {
    process.stdout.write(uninstallUsage());
    return 0;
  }
  const s = (k: string) => (typeof values[k] === 'string' ? (values[k] as string) : undefined);
  let timeoutMs: number;
  let workers: number;
  try {
    timeoutMs = positive(s('timeout'), 'timeout', DEFAULT_TIMEOUT_SECONDS) * 1000;
    workers = positive(s('workers'), 'workers', 4, true);
  } catch (err) {
    process.stderr.write(`raykeeper uninstall: ${errorMessage(err)}\n`);
    return 2;
  }
  const moduleFlags: Record<string, string | boolean | undefined> = {};
  for (const flag of Object.keys(cleanupFlagOptions())) moduleFlags[flag] = values[flag];
  const logger = createLogger('raykeeper-uninstall', { level: process.env.LOG_LEVEL ?? 'warn' });
  const say = (line: string) => void process.stdout.write(`uninstall: ${line}\n`);
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // The passes keep to --timeout; this ends whatever still waits (an API that does not answer) soon after.
  const hardStop = setTimeout(() => abort.abort(), timeoutMs + 10_000);
  hardStop.unref();
  try {
    const [{ loadKubeConfig }, { runUninstall }] = await Promise.all([import('../../kube/kubeconfig.ts'), import('./run.ts')]);
    const kubeConfig = loadKubeConfig(s('kubeconfig'), { configured: true });
    const dryRun = values['dry-run'] === true;
    say(`${dryRun ? 'dry run: nothing is changed; ' : ''}timeout ${timeoutMs / 1000} s`);
    const report = await runUninstall({
      kubeConfig,
      targets: {
        namespace: s('namespace') || process.env.POD_NAMESPACE || DEFAULT_NAMESPACE,
        controllerDeployment: s('controller-deployment') ?? DEFAULT_CONTROLLER_DEPLOYMENT,
        webhookConfiguration: s('webhook-configuration') ?? DEFAULT_WEBHOOK_CONFIGURATION,
      },
      watchNamespace: s('watch-namespace'),
      timeoutMs,
      workers,
      dryRun,
      moduleFlags,
      env: process.env,
      logger,
      say,
      signal: abort.signal,
    });
    const code = uninstallExitCode(report, { addedBackOk: values['added-back-ok'] === true });
    process.stdout.write(`${summary(report, code)}\n`);
    return code;
  } catch (err) {
    process.stderr.write(`raykeeper uninstall: ${errorMessage(err)}\n`);
    return 1;
  } finally {
    clearTimeout(hardStop);
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}
