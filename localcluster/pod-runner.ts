// THE RAY POD RUNNER: a kubelet stand-in for Ray pods only (label ray.io/is-ray-node=yes), for the
// local control plane, which has no kubelet. Each head or worker Pod the RayCluster operator creates is
// started as a local process (localcluster/ray-pod.ts: its own command line and env), on loopback:
// - ports: KubeRay's fixed ones (6379, 8265, 10001, 52365, 8080) would collide between clusters and with
//   other tests, so each head gets free ones, appended to its `ray start` line (the last value of a
//   repeated flag wins) and put in RAY_ADDRESS / RAY_PORT; a worker's `--address=<head svc FQDN>:<port>`
//   becomes `127.0.0.1:<that head's GCS port>`. A worker with init containers (the operator's
//   wait-gcs-ready) starts once its head's Ray runs here, as that init container waits for the GCS;
//   without, once its head was started;
// - a Ray temp dir per pod, as each pod has its own /tmp: every `ray start` records its cluster's GCS
//   address in `<temp dir>/ray_current_cluster`, and Ray's job supervisor gives a job's driver that
//   address, so with one dir for all pods a job's driver joined whichever cluster started a node last;
// - a head's SidecarMode submitter container (`ray-job-submitter`) runs beside its Ray container, its
//   `127.0.0.1:<dashboard port>` pointed at the head's loopback dashboard port;
// - status, as a kubelet writes it through /status: Running + Ready (podIP 127.0.0.1) once `ray start`
//   reports the runtime started, Failed with the Ray container's exit code when that process ends; every
//   container's state (the submitter: running, then terminated with its exit code, the pod no longer
//   Ready);
// - a deleted (or terminating) pod's process group is killed;
// - a Ray container whose `ray start` ended with Ray's own start-up timeout (its raylet did not register
//   within Ray's fixed 30 s: this 2-core test machine under a full suite) is started again, on the same
//   ports and temp dir (its process group was killed first), up to START_TIMEOUT_RETRIES times: a slow
//   machine, not the pod, failed (the real-Ray tests retry the same way: localcluster/ray.ts
//   waitForRayStart). A start that then fails, and any other exit, is the pod's end.
// - a PersistentVolumeClaim volume is a directory per claim under the runner's state, and env values
//   naming its mount path point there (./claim-dirs.ts): embedded GCS storage survives a head restart.
// Not modelled: the autoscaler container (it needs the in-cluster API: `raykeeper dev --kubelet`), probes,
// init containers, resources, other volumes, restarts by restartPolicy (the operator deletes and re-creates a
// failed pod, as KubeRay does).
// Built on the controller runtime's informer and work queue: a pod's key is handled by one worker at a
// time, from the cached pod (a worker waiting for its head is tried again a second later).
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { InformerFactory, type Informer } from '../kube/informer.ts';
import { runWorkers, WorkQueue } from '../kube/queue.ts';
import { objectKey, type ObjectKey } from '../kube/reconciler.ts';
import { isNotFound, KubeClient, MERGE_PATCH } from '../kube/client.ts';
import { createLogger, type Logger } from '../kube/logger.ts';
import { RAY_CLUSTER_LABEL, RAY_NODE_TYPE_LABEL } from '../src/names.ts';
import type { ConfigMap, Pod, Secret } from '../kube/model.ts';
import type { EnvLookups } from '../kube/env.ts';
import { freePort } from './net.ts';
import { claimDirEnv, claimNames } from './claim-dirs.ts';
import { startRayPod, type RayPodProcess } from './ray-pod.ts';
import { exitedOnStartTimeout, type RayInstall } from './ray.ts';
import { CONFIGMAPS, PERSISTENTVOLUMECLAIMS, PODS, SECRETS, type Resource } from '../kube/resources.ts';
import { DASHBOARD_PORT, SUBMITTER_CONTAINER_NAME } from '../src/rayjob/constants.ts';
import { AUTOSCALER_CONTAINER_NAME } from '../src/raycluster/autoscaler.ts';

/** Local Ray processes have no in-cluster API (token, KUBERNETES_SERVICE_HOST) for the autoscaler container. */
export const AUTOSCALING_NEEDS_KUBELET =
  'Autoscaling (enableInTreeAutoscaling) needs `raykeeper dev --kubelet`: here its autoscaler container does not run, workers follow replicas.';

export interface RayPodRunnerOptions {
  kubeConfig: KubeConfig;
  /** One namespace, or all (undefined). */
  namespace?: string;
  ray: RayInstall;
  logger?: Logger;
  /**
   * The heads' dashboard port (default: a free one per head). A fixed one lets the RayJob controller and
   * the submitter reach it by a static URL (`--rayjob-dashboard-url-template http://127.0.0.1:<port>`):
   * one head at a time then.
   */
  dashboardPort?: number;
}

/** How many times a Ray container that hit Ray's start-up timeout is started again. */
const START_TIMEOUT_RETRIES = 2;

interface Running {
  uid: string;
  /** The Ray container's process (a new one after a start-up timeout). */
  proc: RayPodProcess;
  /** SidecarMode's submitter container of a head pod, run beside its Ray container. */
  submitter: RayPodProcess | undefined;
  /** The cluster key (namespace/name) when this is its head. */
  headOf: string | undefined;
}

type ContainerState =
  | { running: { startedAt: string } }
  | { terminated: { exitCode: number; reason: string; startedAt: string; finishedAt: string } };

/** Kubernetes metav1.Time. */
function timestamp(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

async function stopAll(r: Running): Promise<void> {
  await Promise.all([r.proc.stop(), r.submitter?.stop()]);
}

export class RayPodRunner {
  private readonly o: RayPodRunnerOptions;
  private readonly kube: KubeClient;
  private readonly factory: InformerFactory;
  private readonly pods: Informer<Pod>;
  private readonly log: Logger;
  private readonly queue = new WorkQueue();
  private readonly running = new Map<ObjectKey, Running>();
  /** Worker pods waiting for their head (pod key -> cluster key). */
  private readonly waitingWorkers = new Map<ObjectKey, string>();
  private workers: Promise<void> = Promise.resolve();
  /** cluster key (namespace/name) -> the GCS and dashboard ports of its head running here; `up`: its Ray runs. */
  private readonly heads = new Map<string, { gcs: number; dashboard: number; up: boolean }>();
  private temp = '';
  /** Names the pods' temp dirs (short: Ray's socket paths under them must stay below 107 characters). */
  private podsStarted = 0;
  private stopped = false;
  /** Start-up retries under way (see the header): stop() waits for them. */
  private readonly restarts = new Set<Promise<boolean>>();

  constructor(options: RayPodRunnerOptions) {
    this.o = options;
    this.kube = new KubeClient(options.kubeConfig, { fieldManager: 'raykeeper-pod-runner' }); // stands in for the kubelet
    this.factory = new InformerFactory(this.kube, { namespace: options.namespace });
    this.pods = this.factory.get({ ...PODS, labelSelector: 'ray.io/is-ray-node=yes' });
    this.log = options.logger ?? createLogger('ray-pod-runner');
  }

  async start(): Promise<void> {
    this.temp = await mkdtemp(join(tmpdir(), 'rk-raypods-'));
    this.pods.on((_type, obj) => this.queue.add(objectKey(obj)));
    this.factory.start();
    await this.factory.waitForSync();
    this.workers = runWorkers(
      this.queue,
      4,
      (key) => this.handle(key),
      (key, err, retryInMs) => this.log.warn({ err: String(err), pod: key, retryInMs }, 'ray pod runner: failed; retrying'),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.shutdown();
    await this.workers;
    await this.factory.stop();
    // A start-up retry under way ends before the processes are stopped and the temp dirs removed.
    await Promise.allSettled(this.restarts);
    await Promise.all([...this.running.values()].map(stopAll));
    this.running.clear();
    this.kube.close();
    if (this.temp) await rm(this.temp, { recursive: true, force: true });
  }

  /** The loopback dashboard port of a cluster's head started here (undefined: no head of it runs here). */
  dashboardPort(namespace: string, cluster: string): number | undefined {
    return this.heads.get(`${namespace}/${cluster}`)?.dashboard;
  }

  /** Brings one pod (by key, from the cache) along: one call per key at a time. */
  private async handle(key: ObjectKey): Promise<void> {
    const p = this.pods.get(key);
    const here = this.running.get(key);
    if (here && (!p || p.metadata.deletionTimestamp || here.uid !== p.metadata.uid)) {
      this.running.delete(key);
      if (here.headOf) this.heads.delete(here.headOf);
      await stopAll(here);
      this.log.info({ pod: key }, 'stopped the Ray process of a deleted pod');
    }
    if (!p || p.metadata.deletionTimestamp) this.waitingWorkers.delete(key);
    if (
      !p ||
      p.metadata.deletionTimestamp ||
      this.running.has(key) ||
      this.stopped ||
      p.status?.phase === 'Failed' ||
      p.status?.phase === 'Succeeded'
    )
      return;
    if (p.status?.phase === 'Running') return; // another runner's (or a test's)
    await this.launch(key, p);
  }

  /**
   * The pod with loopback ports; undefined when it must wait (a worker whose head does not run here yet).
   * A head's SidecarMode submitter (`submitter`: its container index) reaches the dashboard on the
   * head's loopback port instead of the one in its command.
   */
  private async localize(p: Pod): Promise<{ pod: Pod; extraEnv: Record<string, string>; submitter?: number } | undefined> {
    const pod = structuredClone(p);
    const c = pod.spec!.containers[0]!;
    const line = c.args?.[0] ?? '';
    const cluster = `${p.metadata.namespace}/${p.metadata.labels?.[RAY_CLUSTER_LABEL]}`;
    const head = this.heads.get(cluster);
    const isHead = p.metadata.labels?.[RAY_NODE_TYPE_LABEL] === 'head';
    // A worker waits for its head: to be started here, and with the wait-gcs-ready init container to run.
    if (!isHead && (head === undefined || ((p.spec?.initContainers ?? []).length > 0 && !head.up))) return undefined;
    const claimIds = new Map<string, string>();
    for (const name of claimNames(pod)) {
      const claim = await this.kube.getOrUndefined({ ...PERSISTENTVOLUMECLAIMS, namespace: p.metadata.namespace, name });
      // As a kubelet: no start until the claim exists (the operator makes it before the head).
      if (!claim?.metadata.uid) return undefined;
      claimIds.set(name, claim.metadata.uid);
    }
    const temp = join(this.temp, String(++this.podsStarted));
    await mkdir(temp);
    const claims = claimDirEnv(pod, (name) => join(this.temp, 'claims', claimIds.get(name)!));
    for (const dir of claims.dirs) await mkdir(dir, { recursive: true });
    const [agent, metrics] = [await freePort(), await freePort()];
    const common = ` --node-ip-address=127.0.0.1 --dashboard-agent-listen-port=${agent} --metrics-export-port=${metrics} --object-store-memory=80000000 --temp-dir=${temp} --disable-usage-stats`;
    if (isHead) {
      const [gcs, dashboard, client] = [await freePort(), this.o.dashboardPort ?? (await freePort()), await freePort()];
      c.args = [
        `${line}${common} --port=${gcs} --dashboard-host=127.0.0.1 --dashboard-port=${dashboard} --ray-client-server-port=${client}`,
      ];
      this.heads.set(cluster, { gcs, dashboard, up: false });
      if (pod.spec!.containers.some((x) => x.name === AUTOSCALER_CONTAINER_NAME))
        this.log.warn({ pod: `${p.metadata.namespace}/${p.metadata.name}` }, AUTOSCALING_NEEDS_KUBELET);
      const extraEnv = { RAY_ADDRESS: `127.0.0.1:${gcs}`, RAY_PORT: String(gcs), RAY_USAGE_STATS_ENABLED: '0', ...claims.env };
      const submitter = pod.spec!.containers.findIndex((x, i) => i > 0 && x.name === SUBMITTER_CONTAINER_NAME);
      if (submitter < 0) return { pod, extraEnv };
      const port = (c.ports ?? []).find((x) => x.name === 'dashboard')?.containerPort ?? DASHBOARD_PORT;
      const inPod = new RegExp(`(127\\.0\\.0\\.1|localhost):${port}\\b`, 'g');
      const s = pod.spec!.containers[submitter]!;
      s.args = (s.args ?? []).map((a) => a.replace(inPod, `127.0.0.1:${dashboard}`));
      return { pod, extraEnv, submitter };
    }
    const gcs = head!.gcs;
    c.args = [`${line.replace(/--address=\S+/, `--address=127.0.0.1:${gcs}`)}${common}`];
    return { pod, extraEnv: { RAY_ADDRESS: `127.0.0.1:${gcs}`, RAY_PORT: String(gcs), RAY_USAGE_STATS_ENABLED: '0', ...claims.env } };
  }

  private lookups(): EnvLookups {
    const read = async (plural: 'secrets' | 'configmaps', namespace: string, name: string) => {
      try {
        const resource: Resource<Secret | ConfigMap> = plural === 'secrets' ? SECRETS : CONFIGMAPS;
        const obj = await this.kube.get({ ...resource, namespace, name });
        const data: Record<string, string> = {};
        for (const [k, v] of Object.entries(obj.data ?? {})) data[k] = plural === 'secrets' ? Buffer.from(v, 'base64').toString('utf8') : v;
        return data;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    };
    return { secret: (ns, name) => read('secrets', ns, name), configMap: (ns, name) => read('configmaps', ns, name) };
  }

  private async launch(key: ObjectKey, p: Pod): Promise<void> {
    const local = await this.localize(p);
    if (!local) {
      // A worker whose head does not run here yet, or a pod whose claim does not exist yet: tried again
      // when the head runs, or in a second.
      this.waitingWorkers.set(key, `${p.metadata.namespace}/${p.metadata.labels?.[RAY_CLUSTER_LABEL]}`);
      this.queue.addAfter(key, 1000);
      return;
    }
    this.waitingWorkers.delete(key);
    const lookups = this.lookups();
    const startRay = () => startRayPod(local.pod, { ray: this.o.ray, lookups, extraEnv: local.extraEnv });
    const proc = await startRay();
    const submitter =
      local.submitter === undefined
        ? undefined
        : await startRayPod(local.pod, {
            ray: this.o.ray,
            lookups,
            container: local.submitter,
            extraEnv: { RAY_USAGE_STATS_ENABLED: '0' },
          });
    const headOf =
      p.metadata.labels?.[RAY_NODE_TYPE_LABEL] === 'head' ? `${p.metadata.namespace}/${p.metadata.labels?.[RAY_CLUSTER_LABEL]}` : undefined;
    const entry: Running = { uid: p.metadata.uid ?? '', proc, submitter, headOf };
    this.running.set(key, entry);
    this.log.info({ pod: key, submitter: submitter !== undefined }, 'started a Ray pod as a local process');
    const ref = { ...PODS, namespace: p.metadata.namespace, name: p.metadata.name ?? '', subresource: 'status' };
    const containers = local.pod.spec!.containers;
    const started = timestamp();
    // What a kubelet reports: every container's state (the ones run here), Ready when all are ready.
    const states = new Map<string, { state: ContainerState; ready: boolean }>();
    const rayName = containers[0]!.name;
    const subName = local.submitter === undefined ? undefined : containers[local.submitter]!.name;
    let rayReady = false;
    let rayExit: number | undefined;
    let writes = Promise.resolve();
    const write = () => {
      const containerStatuses = containers
        .filter((c) => states.has(c.name))
        .map((c) => ({ name: c.name, restartCount: 0, image: '', imageID: '', ...states.get(c.name)! }));
      const allReady = containerStatuses.every((c) => c.ready);
      const phase = rayExit !== undefined ? 'Failed' : rayReady ? 'Running' : 'Pending';
      const status = {
        phase,
        podIP: '127.0.0.1',
        hostIP: '127.0.0.1',
        conditions: [{ type: 'Ready', status: allReady && phase === 'Running' ? 'True' : 'False' }],
        containerStatuses,
      };
      writes = writes
        .then(() => this.kube.patch(ref, { status }, MERGE_PATCH))
        .then(
          () => undefined,
          (err: unknown) => this.log.warn({ err: String(err), pod: key }, 'could not write the pod status'),
        );
    };
    const terminated = (code: number | null): ContainerState => ({
      terminated: { exitCode: code ?? 137, reason: code === 0 ? 'Completed' : 'Error', startedAt: started, finishedAt: timestamp() },
    });
    states.set(rayName, { state: { running: { startedAt: started } }, ready: false });
    if (subName !== undefined) states.set(subName, { state: { running: { startedAt: started } }, ready: true });
    const onData = (ray: RayPodProcess) => {
      if (rayReady || rayExit !== undefined || !/Ray runtime started/.test(ray.log())) return;
      rayReady = true;
      states.set(rayName, { state: { running: { startedAt: started } }, ready: true });
      write();
      const head = headOf === undefined ? undefined : this.heads.get(headOf);
      if (head !== undefined && this.running.get(key) === entry) {
        head.up = true;
        // Its workers waiting here go now (their keys were put back with a delay; do not wait for it).
        for (const [k, w] of this.waitingWorkers) if (w === headOf) this.queue.add(k);
      }
    };
    const current = () => this.running.get(key) === entry && !this.stopped;
    let retries = 0;
    /** Whether the Ray container was started again after Ray's start-up timeout; false: the pod ends. */
    const restarted = async (ray: RayPodProcess): Promise<boolean> => {
      if (rayReady || retries >= START_TIMEOUT_RETRIES || !(await exitedOnStartTimeout(ray.proc, ray.log))) return false;
      retries++;
      this.log.warn({ pod: key, retry: retries }, "Ray's start-up timed out (a slow machine): starting the Ray container again");
      if (!current()) return true;
      try {
        const again = await startRay();
        if (!current()) {
          await again.stop();
          return true;
        }
        entry.proc = again;
        watch(again);
        return true;
      } catch (err) {
        this.log.warn({ pod: key, err: String(err) }, 'could not start the Ray container again');
        return false;
      }
    };
    const onExit = async (ray: RayPodProcess, code: number | null) => {
      if (!current()) return;
      const restart = restarted(ray);
      this.restarts.add(restart);
      const again = await restart.finally(() => this.restarts.delete(restart));
      if (again || !current()) return;
      this.running.delete(key);
      this.log.warn({ pod: key, code, output: ray.log().slice(-1000) }, 'a Ray pod process ended');
      rayExit = code ?? 137;
      const head = headOf === undefined ? undefined : this.heads.get(headOf);
      if (head !== undefined) head.up = false;
      states.set(rayName, { state: terminated(code), ready: false });
      write();
      // The pod is Failed and forgotten here (the operator deletes it): its submitter must not outlive it.
      void submitter?.stop();
    };
    const watch = (ray: RayPodProcess) => {
      ray.proc.stdout!.on('data', () => onData(ray));
      ray.proc.stderr!.on('data', () => onData(ray));
      ray.proc.once('exit', (code) => {
        onExit(ray, code).catch((err: unknown) => this.log.error({ pod: key, err: String(err) }, 'handling a Ray pod process end failed'));
      });
    };
    watch(proc);
    submitter?.proc.once('exit', (code) => {
      if (!current() || subName === undefined) return;
      this.log.info({ pod: key, code, output: submitter.log().slice(-2000) }, 'the submitter container ended');
      states.set(subName, { state: terminated(code), ready: false });
      write();
    });
  }
}
