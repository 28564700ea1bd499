// `raykeeper dev --kubelet`: the embedded environment on a real node (localcluster/node, root). raykeeper
// is installed from manifests/ as README's admin section does it: `raykeeper certs generate --kustomize`,
// the image set in the overlay, `kubectl apply --server-side -k`; the webhook and the controller run as
// pods from the image built from our Dockerfile, and Redis runs as an in-cluster pod behind a Service.
import { spawn } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parse, stringify } from 'yaml';
import { REPO_ROOT, requireKubeCommand } from '../localcluster/binaries.ts';
import { waitForRedis } from '../localcluster/redis-server.ts';
import { buildImages, type LocalImage } from '../localcluster/node/images.ts';
import { run } from '../localcluster/node/host.ts';
import { startNodeCluster, type NodeCluster } from '../localcluster/node/node.ts';
import { KubeClient } from '../kube/client.ts';
import { RAYCLUSTERS } from '../src/types.ts';
import { DEPLOYMENTS, SERVICES } from '../kube/resources.ts';
import { devSampleCluster, type DevEnvironment } from './dev.ts';
import { sleep } from '../kube/backoff.ts';
import { GCS_FT_REDIS_CLEANUP_FINALIZER } from '../src/names.ts';
import { RAY_IMAGE } from '../src/ray-release.ts';

export const SYSTEM_NAMESPACE = 'raykeeper-system';
export const WEBHOOK_SERVICE = 'raykeeper-webhook';
/** metadata.name of manifests/base/validatingwebhookconfiguration.yaml. */
export const VALIDATING_WEBHOOK_CONFIGURATION_NAME = 'raykeeper';
/** The images the node needs (tools/build-images.sh names): Ray's for the Ray pods our operator makes. */
export const KUBELET_IMAGES = ['pause', 'raykeeper', 'redis', 'ray'];
export const REDIS_NAME = 'redis';
export const REDIS_NAMESPACE = 'default';

export interface KubeletDevOptions {
  stateDir?: string;
  progress?: (line: string) => void;
  /** Extra images to import (tools/build-images.sh names, e.g. busybox for tests). */
  extraImages?: string[];
  /** false (`--no-validating-webhook`): the install leaves out our ValidatingWebhookConfiguration (dev.ts). */
  validatingWebhook?: boolean;
}

export interface KubeletDevEnvironment extends DevEnvironment {
  node: string;
  cluster: NodeCluster;
  /** The in-cluster Redis: `redis.default.svc.cluster.local:6379` from pods, redis.host:port (its ClusterIP) from this machine. */
  redisInCluster: string;
  images: LocalImage[];
}

/** The in-cluster Redis like KubeRay's external-Redis sample: a Deployment and a Service (no persistence). */
export function redisManifests(image: string): object[] {
  const labels = { app: REDIS_NAME };
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: REDIS_NAME, namespace: REDIS_NAMESPACE, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            containers: [
              {
                name: 'redis',
                image,
                imagePullPolicy: 'Never',
                command: ['redis-server', '--protected-mode', 'no', '--save', '', '--appendonly', 'no'],
                ports: [{ name: 'redis', containerPort: 6379 }],
                readinessProbe: { tcpSocket: { port: 6379 }, periodSeconds: 1 },
              },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: REDIS_NAME, namespace: REDIS_NAMESPACE, labels },
      spec: { selector: labels, ports: [{ name: 'redis', port: 6379, targetPort: 'redis' }] },
    },
  ];
}

/** `kustomize edit set image raykeeper=<ref>`: the overlay's images entry for our image. */
export async function setOverlayImage(overlayDir: string, ref: string): Promise<void> {
  const path = join(overlayDir, 'kustomization.yaml');
  const k = parse(await readFile(path, 'utf8')) as { images?: Array<{ name: string; newName?: string; newTag?: string }> };
  const at = ref.lastIndexOf(':');
  const entry = { name: 'raykeeper', newName: ref.slice(0, at), newTag: ref.slice(at + 1) };
  k.images = [...(k.images ?? []).filter((i) => i.name !== 'raykeeper'), entry];
  await writeFile(path, stringify(k));
}

/** A `$patch: delete` of our ValidatingWebhookConfiguration in the overlay: the install never creates it. */
export async function dropValidatingWebhook(overlayDir: string): Promise<void> {
  const path = join(overlayDir, 'kustomization.yaml');
  const k = parse(await readFile(path, 'utf8')) as { patches?: Array<{ patch: string }> };
  const patch = stringify({
    $patch: 'delete',
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: VALIDATING_WEBHOOK_CONFIGURATION_NAME },
  });
  k.patches = [...(k.patches ?? []).filter((p) => p.patch !== patch), { patch }];
  await writeFile(path, stringify(k));
}

async function runCli(args: string[]): Promise<void> {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'raykeeper.js'), ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const code = await new Promise<number | null>((r) => child.on('close', r));
  if (code !== 0) throw new Error(`raykeeper ${args.join(' ')} failed (${code}): ${stderr}`);
}

/** Waits until a Deployment has all its replicas updated and available. */
export async function waitForDeployment(kube: KubeClient, namespace: string, name: string, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    const d = await kube.get({ ...DEPLOYMENTS, namespace, name }).catch(() => undefined);
    const want = d?.spec?.replicas ?? 1;
    last = JSON.stringify(d?.status ?? {});
    if (
      d &&
      (d.status?.observedGeneration ?? 0) >= (d.metadata.generation ?? 0) &&
      d.status?.availableReplicas === want &&
      d.status?.updatedReplicas === want &&
      d.status?.replicas === want // no old replica left (kubectl rollout status's last check)
    )
      return;
    if (Date.now() > deadline) throw new Error(`Deployment ${namespace}/${name} not available in ${timeoutMs} ms (status ${last})`);
    await sleep(500);
  }
}

/**
 * Waits until the API server's admission really reaches the webhook through its Service: a Ready pod
 * behind the Service is not yet enough (kube-proxy may not have programmed the Service's rules), and with
 * failurePolicy Ignore an unreachable webhook is silently skipped. Probes with a server-side dry run.
 */
export async function waitForAdmission(kube: KubeClient, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const probe = {
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    metadata: { name: 'raykeeper-admission-probe', annotations: { 'ray.io/ft-enabled': 'true' } },
    spec: { headGroupSpec: { rayStartParams: {}, template: { spec: { containers: [{ name: 'ray-head', image: RAY_IMAGE }] } } } },
  };
  let last = '';
  for (;;) {
    const answer = await kube
      .create({ ...RAYCLUSTERS, namespace: 'default' }, probe, { query: { dryRun: 'All' } })
      .catch((err: unknown) => {
        last = err instanceof Error ? err.message : String(err);
        return undefined;
      });
    if (answer?.metadata?.finalizers?.includes(GCS_FT_REDIS_CLEANUP_FINALIZER)) return;
    if (answer) last = 'the dry-run RayCluster came back without the finalizer (the webhook was not reached)';
    if (Date.now() > deadline)
      throw new Error(`the API server does not reach the webhook through its Service after ${timeoutMs} ms: ${last}`);
    await sleep(500);
  }
}

export async function startKubeletDev(options: KubeletDevOptions = {}): Promise<KubeletDevEnvironment> {
  const progress = options.progress ?? ((line: string) => process.stderr.write(`${line}\n`));
  const stateDir = resolve(options.stateDir ?? join(REPO_ROOT, '.raykeeper', 'dev'));
  await mkdir(stateDir, { recursive: true });

  progress('[1/5] images (tools/build-images.sh: pause, our Dockerfile, redis, Ray; cached by content)');
  const images = await buildImages([...KUBELET_IMAGES, ...(options.extraImages ?? [])]);
  const ref = (recipe: string): string => {
    const hit = images.find((i) => i.archive.includes(`/${recipe}-`));
    if (!hit) throw new Error(`tools/build-images.sh printed no ${recipe} image`);
    return hit.name;
  };

  progress('[2/5] the control plane and a real node (containerd, kubelet, kube-proxy, cluster DNS)');
  const cluster = await startNodeCluster({
    kubeconfigPath: join(stateDir, 'kubeconfig'),
    crdsDir: false,
    images: images.map((i) => i.archive),
    onProgress: (m) => progress(`      ${m}`),
  });
  const kube = new KubeClient(cluster.controlPlane.kubeConfig());
  const stop = async (): Promise<void> => {
    kube.close();
    const leftovers = await cluster.stop();
    if (leftovers.length > 0) progress(`clean-up left: ${leftovers.join('; ')}`);
  };
  try {
    const kubectl = async (args: string[], input?: string): Promise<string> => {
      if (input === undefined)
        return run(requireKubeCommand('kubectl'), ['--kubeconfig', cluster.kubeconfigPath, ...args], { timeoutMs: 300_000 });
      const file = join(stateDir, 'apply.json');
      await writeFile(file, input);
      try {
        return await run(requireKubeCommand('kubectl'), ['--kubeconfig', cluster.kubeconfigPath, ...args, '-f', file], {
          timeoutMs: 300_000,
        });
      } finally {
        await rm(file, { force: true });
      }
    };

    progress('[3/5] Redis as an in-cluster pod (Deployment + Service redis in default)');
    // JSON, not YAML: kubectl reads YAML 1.1, where a bare `no` is false.
    await kubectl(['apply', '--server-side'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: redisManifests(ref('redis')) }));

    progress('[4/5] installing raykeeper from manifests/ (certs generate --kustomize, image set, apply --server-side -k)');
    const overlay = join(stateDir, 'install');
    await rm(overlay, { recursive: true, force: true });
    await runCli([
      'certs',
      'generate',
      '--out',
      join(stateDir, 'webhook-certs'),
      '--service',
      WEBHOOK_SERVICE,
      '--namespace',
      SYSTEM_NAMESPACE,
      '--kustomize',
      overlay,
    ]);
    await setOverlayImage(overlay, ref('raykeeper'));
    if (options.validatingWebhook === false) {
      progress('      --no-validating-webhook: the ValidatingWebhookConfiguration is left out of the install');
      await dropValidatingWebhook(overlay);
    }
    await kubectl(['apply', '--server-side', '-k', overlay]);

    progress('[5/5] waiting for Redis, the webhook and the controller to be available');
    await waitForDeployment(kube, REDIS_NAMESPACE, REDIS_NAME);
    await waitForDeployment(kube, SYSTEM_NAMESPACE, 'raykeeper-webhook');
    await waitForDeployment(kube, SYSTEM_NAMESPACE, 'raykeeper-controller');
    await waitForAdmission(kube);
    const svc = await kube.get({ ...SERVICES, namespace: REDIS_NAMESPACE, name: REDIS_NAME });
    const clusterIP = svc.spec?.clusterIP;
    if (!clusterIP) throw new Error(`Service ${REDIS_NAMESPACE}/${REDIS_NAME} has no clusterIP`);
    // An Available Deployment is not yet a reachable Service: until kube-proxy has written the endpoint's
    // rules, the ClusterIP REJECTs (ECONNREFUSED). Ready means a PING through the ClusterIP answers.
    await waitForRedis(6379, false, 60_000, () => true, clusterIP);
    const redisInCluster = `${REDIS_NAME}.${REDIS_NAMESPACE}.svc.cluster.local:6379`;

    const samplesDir = join(stateDir, 'samples');
    await mkdir(samplesDir, { recursive: true });
    const sample = join(samplesDir, 'raycluster-gcs-ft.yaml');
    await writeFile(sample, stringify(devSampleCluster(redisInCluster)));
    return {
      kubeconfig: cluster.kubeconfigPath,
      redis: { host: clusterIP, port: 6379 },
      redisInCluster,
      webhookUrl: `https://${WEBHOOK_SERVICE}.${SYSTEM_NAMESPACE}.svc:443`,
      samples: [sample],
      node: `${cluster.nodeName} Ready`,
      ray: ref('ray'),
      validatingWebhook: options.validatingWebhook ?? true,
      cluster,
      images,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
