// `raykeeper dev`: the embedded default. With no cluster configured it runs everything on loopback:
// etcd + kube-apiserver (built from source), a redis-server, the webhook (registered through our
// Mutating- and ValidatingWebhookConfiguration with a url and caBundle), the controller, and the job runner that stands in
// for the kubelet, so a deleted RayCluster's cleanup Job really runs against the local Redis.
import { mkdir, writeFile } from 'node:fs/promises';
import { delimiter, join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { generateCertificates, caBundle } from '../certs/generate.ts';
import { writeBundle } from '../certs/files.ts';
import { startController, type RunningController } from '../controller/main.ts';
import { applyObject } from '../localcluster/apply.ts';
import { ensureBinaries, executable, kubeCommandPath, REPO_ROOT } from '../localcluster/binaries.ts';
import { startControlPlane, type ControlPlane } from '../localcluster/control-plane.ts';
import { startJobRunner, type JobRunner } from '../localcluster/job-runner.ts';
import { startOwnerGarbageCollector } from '../localcluster/owner-gc.ts';
import { freePort } from '../localcluster/net.ts';
import { AUTOSCALING_NEEDS_KUBELET } from '../localcluster/pod-runner.ts';
import { startRedisServer, type RedisServer } from '../localcluster/redis-server.ts';
import { localWebhookConfigurations } from '../localcluster/webhook-config.ts';
import { KubeClient } from '../kube/client.ts';
import { createLogger, type Logger } from '../kube/logger.ts';
import { RAY_API_VERSION } from '../src/names.ts';
import { RAY_IMAGE, RAY_RELEASE } from '../src/ray-release.ts';
import { runWebhook } from '../webhook/main.ts';
import { startDevRay } from './ray-pods.ts';

export interface DevOptions {
  /** Where the kubeconfig, certificates and samples go (default .raykeeper/dev in the repository). */
  stateDir?: string;
  /** Progress lines (default: stderr). */
  progress?: (line: string) => void;
  /** Everything's logs (default: pino at LOG_LEVEL, or warn). */
  logger?: Logger;
  /**
   * Register our ValidatingWebhookConfiguration (default true). false (`--no-validating-webhook`): only the
   * mutating one, so the controllers alone judge objects, as KubeRay's default install (no webhook): an
   * object KubeRay marks ValidationFailed is stored and marked so instead of refused at `kubectl apply`.
   */
  validatingWebhook?: boolean;
}

export interface DevEnvironment {
  kubeconfig: string;
  redis: { host: string; port: number };
  webhookUrl: string;
  /** The controller's /healthz /readyz /metrics server (plain HTTP; the webhook's /metrics is on webhookUrl). */
  controllerUrl?: string;
  samples: string[];
  /** With a real node (`--kubelet`): "<name> Ready". */
  node?: string;
  /** What runs Ray pods: the `ray` executable, with --kubelet the Ray image; undefined: RayJobs stay Initializing. */
  ray?: string;
  /** false: started with `--no-validating-webhook`. */
  validatingWebhook?: boolean;
  stop(): Promise<void>;
}

/** A GCS-FT RayCluster for the local Redis, with metadata.annotations absent (the webhook fills them). */
export function devSampleCluster(redisAddress: string): object {
  return {
    apiVersion: RAY_API_VERSION,
    kind: 'RayCluster',
    metadata: { name: 'raycluster-gcs-ft' },
    spec: {
      rayVersion: RAY_RELEASE,
      gcsFaultToleranceOptions: { redisAddress },
      headGroupSpec: {
        rayStartParams: {},
        template: { spec: { containers: [{ name: 'ray-head', image: RAY_IMAGE }] } },
      },
      workerGroupSpecs: [
        {
          groupName: 'small-group',
          replicas: 1,
          minReplicas: 1,
          maxReplicas: 2,
          rayStartParams: {},
          template: { spec: { containers: [{ name: 'ray-worker', image: RAY_IMAGE }] } },
        },
      ],
    },
  };
}

export async function startDev(options: DevOptions = {}): Promise<DevEnvironment> {
  const progress = options.progress ?? ((line: string) => process.stderr.write(`${line}\n`));
  const logger = options.logger ?? createLogger('raykeeper-dev', { level: process.env.LOG_LEVEL ?? 'warn' });
  const stateDir = resolve(options.stateDir ?? join(REPO_ROOT, '.raykeeper', 'dev'));
  await mkdir(stateDir, { recursive: true });
  const stops: Array<() => Promise<unknown>> = [];
  const stop = async () => {
    for (const fn of stops.reverse()) await fn().catch((err: unknown) => logger.warn({ err }, 'dev: stop step failed'));
    stops.length = 0;
  };
  try {
    progress('[1/6] control plane binaries (etcd, kube-apiserver; built from source on first run, several minutes)');
    await ensureBinaries((line) => progress(`      ${line}`));

    progress('[2/6] starting etcd and kube-apiserver on loopback');
    const cp: ControlPlane = await startControlPlane({
      kubeconfigPath: join(stateDir, 'kubeconfig'),
      onProgress: (m) => progress(`      ${m}`),
    });
    stops.push(() => cp.stop());
    const kubeConfig = cp.kubeConfig('default');
    const kube = new KubeClient(kubeConfig);
    stops.push(async () => kube.close());

    progress('[3/6] starting redis-server on loopback');
    const redis: RedisServer = await startRedisServer();
    stops.push(() => redis.stop());

    progress('[4/6] starting the admission webhook (certificates from `raykeeper certs`)');
    const certDir = join(stateDir, 'certs');
    const bundle = generateCertificates({
      service: 'raykeeper-webhook',
      namespace: 'raykeeper-system',
      ips: ['127.0.0.1'],
      dnsNames: ['localhost'],
    });
    const paths = await writeBundle(certDir, bundle);
    const port = await freePort();
    let stopWebhook: () => void = () => {};
    const stopSignal = new Promise<void>((r) => (stopWebhook = r));
    const listening = new Promise<void>((resolveListening, rejectListening) => {
      runWebhook({
        certFile: paths.cert,
        keyFile: paths.key,
        host: '127.0.0.1',
        port,
        logger,
        // The storage-namespace check lists and watches this control plane's RayClusters.
        kubeConfig,
        stopSignal,
        onListening: () => resolveListening(),
      }).catch(rejectListening);
    });
    await listening;
    stops.push(async () => stopWebhook());
    const webhookUrl = `https://127.0.0.1:${port}`;
    const validatingWebhook = options.validatingWebhook ?? true;
    if (!validatingWebhook) progress('      --no-validating-webhook: only the mutating webhook is registered');
    for (const config of await localWebhookConfigurations({
      baseUrl: webhookUrl,
      caBundle: caBundle(bundle.caCert),
      validating: validatingWebhook,
    })) {
      await applyObject(kube, config);
    }

    progress('[5/6] starting the controller');
    const ray = await startDevRay({ kubeConfig, logger, progress });
    stops.push(() => ray.stop());
    const controller: RunningController = await startController({
      kubeConfig,
      healthPort: 0,
      healthHost: '127.0.0.1',
      logger,
      moduleFlags: ray.controllerFlags,
    });
    stops.push(() => controller.stop());

    progress('[6/6] starting the job runner (stands in for the kubelet: runs Jobs as local processes)');
    const runner: JobRunner = await startJobRunner({ kubeConfig, logger, baseEnv: ray.jobEnv });
    stops.push(() => runner.stop());
    const gc = await startOwnerGarbageCollector({ kubeConfig, logger });
    stops.push(() => gc.stop());

    const samplesDir = join(stateDir, 'samples');
    await mkdir(samplesDir, { recursive: true });
    const sample = join(samplesDir, 'raycluster-gcs-ft.yaml');
    await writeFile(sample, stringify(devSampleCluster(`${redis.host}:${redis.port}`)));
    return {
      kubeconfig: cp.info.kubeconfigPath,
      redis: { host: redis.host, port: redis.port },
      webhookUrl,
      controllerUrl: `http://127.0.0.1:${controller.port}`,
      samples: [sample],
      ray: ray.ray,
      validatingWebhook,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The kubectl the hints name: one on PATH, else the one tools/setup.sh built (a fresh machine has no other). */
export function hintKubectl(env: NodeJS.ProcessEnv = process.env): string {
  const onPath = (env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && executable(join(dir, 'kubectl')));
  return onPath ? 'kubectl' : kubeCommandPath('kubectl', env);
}

export function readyText(env: DevEnvironment, kubectl = hintKubectl()): string {
  const k = `${kubectl} --kubeconfig ${env.kubeconfig}`;
  return [
    `kubeconfig: ${env.kubeconfig}`,
    `redis: ${env.redis.host}:${env.redis.port}`,
    ...(env.node ? [`node: ${env.node}`] : []),
    `webhook: ${env.webhookUrl}${env.validatingWebhook === false ? ' (mutating only: --no-validating-webhook; invalid objects are stored and marked by the controllers, as KubeRay)' : ''}`,
    // For a Prometheus on this machine (the webhook's certificate is signed by the CA in the state dir's certs/).
    ...(env.controllerUrl ? [`metrics: ${env.controllerUrl}/metrics (controller) ${env.webhookUrl}/metrics (webhook)`] : []),
    '',
    'Try:',
    `  ${k} apply -f ${env.samples[0]}`,
    `  ${k} get raycluster raycluster-gcs-ft -o yaml    # finalizer + pinned storage namespace`,
    `  ${k} delete raycluster raycluster-gcs-ft         # cleanup Job runs, finalizer released`,
    `  ${k} get jobs,events`,
    `  npx raykeeper redis-cleanup --list --address ${env.redis.host}:${env.redis.port}`,
    `  ${k} apply -f ${join(REPO_ROOT, 'manifests', 'samples', 'rayjob.yaml')}   # ${env.ray ? 'New -> Initializing -> Running -> Complete' : 'stays Initializing without Ray (bash tools/setup.sh installs it)'}`,
    `  ${k} apply -f ${join(REPO_ROOT, 'manifests', 'samples', 'rayjob-sidecar.yaml')}   # SidecarMode: the submitter runs in the head pod, no Job`,
    `  ${k} apply -f ${join(REPO_ROOT, 'manifests', 'samples', 'rayjob-deletion-rules.yaml')}   # workers go when it succeeds, the cluster 30 s later`,
    `  ${k} apply -f ${join(REPO_ROOT, 'manifests', 'samples', 'raycronjob.yaml')}   # a RayJob a minute: ${k} get rayjobs -l ray.io/cronjob-name=raycronjob-sample`,
    ...(env.node ? [] : ['', AUTOSCALING_NEEDS_KUBELET]),
    '',
    'Ctrl-C stops everything.',
  ].join('\n');
}
