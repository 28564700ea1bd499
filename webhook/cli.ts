// `raykeeper webhook --cert FILE --key FILE [--host H] [--port P] [--drain-seconds N] [--companion on|off]
// [--storage-claims auto|on|off] [--kubeconfig FILE]`: the admission webhook over HTTPS.
import {
  DEFAULT_WEBHOOK_PORT,
  MUTATE_RAYCLUSTER_PATH,
  MUTATE_RAYCRONJOB_PATH,
  MUTATE_RAYJOB_PATH,
  VALIDATE_RAYCLUSTER_PATH,
  VALIDATE_RAYCRONJOB_PATH,
  VALIDATE_RAYJOB_PATH,
} from '../src/names.ts';
import { DEFAULT_WEBHOOK_HOST, runWebhook } from './main.ts';
import { errorMessage } from '../src/errors.ts';
import { companionWarningOptions } from '../src/admission/warnings.ts';
import { finish, parseCommandLine, usageError } from '../bin/args.ts';
import { loadKubeConfig, type KubeCredentials } from '../kube/kubeconfig.ts';
import { createLogger } from '../kube/logger.ts';

const USAGE = `Usage: raykeeper webhook --cert FILE --key FILE [--host H] [--port P] [--drain-seconds N] [--companion on|off]
                         [--storage-claims auto|on|off] [--kubeconfig FILE]

Serves the admission webhooks over HTTPS (TLS 1.2+):
  POST ${MUTATE_RAYCLUSTER_PATH}     GCS fault-tolerance finalizer and storage namespace
  POST ${MUTATE_RAYJOB_PATH}         RayJob defaults (deployment status New, submissionMode)
  POST ${MUTATE_RAYCRONJOB_PATH}     RayCronJob defaults (concurrencyPolicy Allow, history limits 3 / 1)
  POST ${VALIDATE_RAYCLUSTER_PATH}   KubeRay's RayCluster rules, the GCS data UPDATE rules, warnings
  POST ${VALIDATE_RAYJOB_PATH}       KubeRay's RayJob rules, warnings
  POST ${VALIDATE_RAYCRONJOB_PATH}   the RayCronJob controller's rules, warnings
  GET  /healthz, /readyz, /metrics
Rotated certificate files are picked up without a restart (file events, every 30 s, and SIGHUP).

Options:
  --cert FILE   PEM serving certificate (e.g. tls.crt from \`raykeeper certs generate\`)
  --key FILE    PEM private key (tls.key)
  --host H      address to listen on (default ${DEFAULT_WEBHOOK_HOST})
  --port P      port to listen on (default ${DEFAULT_WEBHOOK_PORT})
  --drain-seconds N
                on SIGTERM, keep answering N seconds (0-60, default 0), each answer closing its
                connection, before stopping: behind a Service, lets the endpoint leave first
  --companion on|off
                on: raykeeper runs beside KubeRay's operator (the controller's --companion=on), so
                no warnings about fields raykeeper's own RayCluster operator does not act on (default off)
  --storage-claims auto|on|off
                on: list and watch every namespace's RayClusters (RBAC: list, watch rayclusters) and
                refuse a RayCluster whose storage namespace another cluster holds on the same Redis;
                /readyz waits for the first list. auto (default): on when Kubernetes credentials are
                found (--kubeconfig, KUBECONFIG, ~/.kube/config, the pod's service account token),
                else off with a warning. off: not checked (the controller's cleanup guard still is)
  --kubeconfig FILE
                credentials for --storage-claims (default: as kubectl, then the in-cluster account)

Environment: LOG_LEVEL (pino level, default info); ENABLE_GCS_FT_REDIS_CLEANUP=false adds no finalizer.
`;

const OPTIONS = {
  cert: { type: 'string' },
  key: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'drain-seconds': { type: 'string' },
  companion: { type: 'string' },
  'storage-claims': { type: 'string' },
  kubeconfig: { type: 'string' },
} as const;

export async function run(argv: string[]): Promise<number> {
  const line = parseCommandLine('raykeeper webhook', argv, OPTIONS, USAGE);
  if (line.kind === 'exit') return finish(line);
  const { values } = line;
  const missing = (['cert', 'key'] as const).filter((k) => !values[k]);
  if (missing.length > 0) {
    process.stderr.write(usageError('raykeeper webhook', `missing ${missing.map((m) => `--${m}`).join(', ')}`));
    return 2;
  }
  const port = values.port === undefined ? DEFAULT_WEBHOOK_PORT : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`raykeeper webhook: --port must be a whole number from 0 to 65535, got ${JSON.stringify(values.port)}\n`);
    return 2;
  }
  const drainSeconds = values['drain-seconds'] === undefined ? 0 : Number(values['drain-seconds']);
  if (!Number.isInteger(drainSeconds) || drainSeconds < 0 || drainSeconds > 60) {
    process.stderr.write(
      `raykeeper webhook: --drain-seconds must be a whole number from 0 to 60, got ${JSON.stringify(values['drain-seconds'])}\n`,
    );
    return 2;
  }
  let warningOptions;
  try {
    warningOptions = companionWarningOptions(values.companion);
  } catch (err) {
    process.stderr.write(`raykeeper webhook: ${errorMessage(err)}\n`);
    return 2;
  }
  const claimsMode = (values['storage-claims'] ?? 'auto').trim().toLowerCase();
  if (claimsMode !== 'auto' && claimsMode !== 'on' && claimsMode !== 'off') {
    process.stderr.write(`raykeeper webhook: --storage-claims must be auto, on or off, got ${JSON.stringify(values['storage-claims'])}\n`);
    return 2;
  }
  const logger = createLogger('raykeeper-webhook');
  let kubeConfig: KubeCredentials | undefined;
  if (claimsMode !== 'off') {
    try {
      kubeConfig = loadKubeConfig(values.kubeconfig, { configured: true });
    } catch (err) {
      if (claimsMode === 'on') {
        process.stderr.write(`raykeeper webhook: --storage-claims on: ${errorMessage(err)}\n`);
        return 2;
      }
      logger.warn(
        { reason: errorMessage(err) },
        'no Kubernetes credentials: storage namespaces are not checked against other RayClusters at admission (--storage-claims auto); the controller still keeps a shared namespace at deletion',
      );
    }
  }
  try {
    await runWebhook({
      kubeConfig,
      logger,
      companion: warningOptions.companion === true,
      certFile: values.cert!,
      keyFile: values.key!,
      host: values.host ?? DEFAULT_WEBHOOK_HOST,
      port,
      drainMs: drainSeconds * 1000,
    });
  } catch (err) {
    process.stderr.write(`raykeeper webhook: ${errorMessage(err)}\n`);
    return 1;
  }
  return 0;
}
