// Our admission webhook beside our controller in the scale bench, as manifests/ installs the two: a child
// process (`raykeeper webhook`, its own CPU), both webhook configurations registered for the namespaces
// labelled BENCH_WEBHOOK_LABEL only (ours; KubeRay's rounds are not called). A GCS-FT RayCluster then
// gets its finalizer at admission, where without the webhook our controller adds it with a PATCH (and
// KubeRay with an Update).
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { caBundle, generateCertificates } from '../certs/generate.ts';
import { writeBundle } from '../certs/files.ts';
import { applyObject } from '../localcluster/apply.ts';
import { REPO_ROOT } from '../localcluster/binaries.ts';
import { freePort } from '../localcluster/net.ts';
import { localWebhookConfigurations } from '../localcluster/webhook-config.ts';
import type { KubeClient } from '../kube/client.ts';
import { RAYCLUSTERS } from '../src/types.ts';
import { sleep } from '../kube/backoff.ts';
import { GCS_FT_REDIS_CLEANUP_FINALIZER } from '../src/names.ts';

export const BENCH_WEBHOOK_LABEL = 'raykeeper-bench/webhook';

export interface BenchWebhook {
  pid: number;
  /** It ended before stop() (its /proc entry, and so its CPU figure, is gone). */
  exited(): boolean;
  stop(): Promise<void>;
}

/**
 * Starts the webhook, registers it for the labelled namespaces, and resolves once the API server calls it
 * (`probe`: a GCS-FT RayCluster, dry-run created in `probeNamespace`, labelled).
 */
export async function startOurWebhook(kube: KubeClient, probeNamespace: string, probe: Record<string, unknown>): Promise<BenchWebhook> {
  const dir = await mkdtemp(join(tmpdir(), 'raykeeper-bench-webhook-'));
  const bundle = generateCertificates({ service: 'raykeeper-webhook', namespace: 'raykeeper-system', ips: ['127.0.0.1'] });
  const paths = await writeBundle(dir, bundle);
  const port = await freePort();
  const proc = spawn(
    process.execPath,
    [
      join(REPO_ROOT, 'bin', 'raykeeper.js'),
      'webhook',
      '--cert',
      paths.cert,
      '--key',
      paths.key,
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
    ],
    { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  let spawnError: Error | undefined;
  proc.once('error', (err) => (spawnError = err));
  const ended = () => spawnError !== undefined || proc.exitCode !== null || proc.signalCode !== null;
  const stop = async (): Promise<void> => {
    if (!ended()) {
      const exited = new Promise<void>((r) => proc.once('exit', () => r()));
      proc.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (const config of await localWebhookConfigurations({
      baseUrl: `https://127.0.0.1:${port}`,
      caBundle: caBundle(bundle.caCert),
      namespaceSelector: { matchLabels: { [BENCH_WEBHOOK_LABEL]: 'true' } },
    }))
      await applyObject(kube, config);
    // The API server calls a webhook once it has seen its configuration and the webhook listens: server-side
    // dry runs until one comes back with the finalizer the webhook adds.
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (ended()) throw new Error(`raykeeper webhook ended: ${spawnError?.message ?? proc.exitCode ?? proc.signalCode}`);
      const answer = await kube
        .create({ ...RAYCLUSTERS, namespace: probeNamespace }, probe, { query: { dryRun: 'All' } })
        .catch(() => undefined);
      if (answer?.metadata.finalizers?.includes(GCS_FT_REDIS_CLEANUP_FINALIZER)) break;
      if (Date.now() > deadline) throw new Error('the API server did not call the bench webhook within 60 s');
      await sleep(200);
    }
    return { pid: proc.pid!, exited: ended, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
