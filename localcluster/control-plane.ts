// A real Kubernetes control plane on loopback: etcd + kube-apiserver, built from source by
// tools/build-control-plane.sh (no Docker, no kubelet, no controller-manager). Used by the tests and by
// `raykeeper dev`. Token auth (an admin token in system:masters), RBAC authorization, the apiserver's
// self-signed serving certificate (its CA goes into the kubeconfig, so TLS is verified).
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, rmSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { type ControlPlaneBinaries, REPO_ROOT, requireBinaries } from './binaries.ts';
import { applyCrds } from './apply.ts';
import { freePort, get } from './net.ts';
import { onExitCleanup, spawnSupervised, startWatchdog, terminate, type Supervised } from './process.ts';
import { KubeClient } from '../kube/client.ts';
import { sleep } from '../kube/backoff.ts';

/** Everything needed to reach (and to stop) a running control plane; JSON-serialisable. */
export interface ControlPlaneInfo {
  /** https://127.0.0.1:<port> */
  server: string;
  /** Bearer token of user `admin` in group system:masters. */
  token: string;
  /** PEM of the apiserver's self-signed serving certificate chain (its CA verifies the server). */
  caCert: string;
  kubeconfigPath: string;
  /** Temporary directory holding etcd's data, certificates, logs; removed on stop. */
  dir: string;
  etcdUrl: string;
  pids: { etcd: number; kubeApiserver: number };
  /** Watchdogs that kill the processes if `ownerPid` dies. */
  watchdogPids: number[];
  /** The pid whose death takes the control plane down. */
  ownerPid: number;
  versions: { etcd: string; kubernetes: string };
}

export interface ControlPlane {
  info: ControlPlaneInfo;
  /** A client-node KubeConfig for the admin user, optionally with a default namespace. */
  kubeConfig(namespace?: string): KubeConfig;
  /** SIGTERM (then SIGKILL) kube-apiserver and etcd, remove the temporary directory. Idempotent. */
  stop(): Promise<void>;
}

export interface StartOptions {
  binaries?: ControlPlaneBinaries;
  /** Parent directory of the temporary directory (default: the OS temp dir). */
  tmpRoot?: string;
  /** Where to write the kubeconfig (default <dir>/kubeconfig). */
  kubeconfigPath?: string;
  /** Directory of CRD YAML files to apply and wait for (default manifests/crds); false for none. */
  crdsDir?: string | false;
  /**
   * Let the processes outlive this process (the shared test control plane: the tap `before` script
   * starts it and exits). They die with `ownerPid` instead, or when stopControlPlane(info) is called.
   */
  detached?: boolean;
  /** Whose death kills the control plane (default: this process). */
  ownerPid?: number;
  onProgress?: (message: string) => void;
  /** How long to wait for etcd and for the apiserver's /readyz (default 180 s: 2 slow cores). */
  readyTimeoutMs?: number;
  /** Extra kube-apiserver flags (e.g. --v=4). */
  apiserverArgs?: string[];
  /** Serve a real node (localcluster/node): see NodeServing. */
  node?: NodeServing;
}

/**
 * What a control plane with a real node needs: served on the node's bridge address (pods reach it
 * through the `kubernetes` Service, whose endpoint is the advertise address) instead of loopback; x509
 * client certificates from the cluster CA (the kubelet's `system:node:<name>`); a client certificate to
 * call the kubelet with; the Node authorizer, NodeRestriction, and the ServiceAccount admission plugin
 * (pods get their tokens).
 */
export interface NodeServing {
  address: string;
  clientCaFile: string;
  kubeletClientCertFile: string;
  kubeletClientKeyFile: string;
  serviceClusterIpRange: string;
  /** Extra NO_PROXY entries (the pod and service CIDRs: the apiserver calls webhooks by Service). */
  noProxy: string[];
}

export const DEFAULT_CRDS_DIR = join(REPO_ROOT, 'manifests', 'crds');
export const SERVICE_CLUSTER_IP_RANGE = '10.0.0.0/24';

/** Env for the children: the apiserver honours proxy variables when it calls webhooks on 127.0.0.1. */
export function loopbackEnv(env: NodeJS.ProcessEnv = process.env, extra: string[] = []): NodeJS.ProcessEnv {
  const existing = env.NO_PROXY ?? env.no_proxy;
  const noProxy = ['127.0.0.1', 'localhost', ...extra, ...(existing ? [existing] : [])].join(',');
  return { ...env, NO_PROXY: noProxy, no_proxy: noProxy };
}

/** The kubeconfig document for a control plane (token auth, CA data: verified TLS). */
export function kubeconfigDocument(info: Pick<ControlPlaneInfo, 'server' | 'token' | 'caCert'>, namespace = 'default'): object {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'raykeeper-local',
        cluster: { server: info.server, 'certificate-authority-data': Buffer.from(info.caCert).toString('base64') },
      },
    ],
    users: [{ name: 'admin', user: { token: info.token } }],
    contexts: [{ name: 'raykeeper-local', context: { cluster: 'raykeeper-local', user: 'admin', namespace } }],
    'current-context': 'raykeeper-local',
  };
}

/** Files inside a control plane's directory that the node's components read. */
export function controlPlaneFiles(info: Pick<ControlPlaneInfo, 'dir'>): { serviceAccountKey: string; servingCa: string } {
  return { serviceAccountKey: join(info.dir, 'sa.key'), servingCa: join(info.dir, 'certs', 'apiserver.crt') };
}

/** A client-node KubeConfig for a running control plane (no file needed). */
export function kubeConfigFor(info: Pick<ControlPlaneInfo, 'server' | 'token' | 'caCert'>, namespace?: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'raykeeper-local', server: info.server, caData: Buffer.from(info.caCert).toString('base64'), skipTLSVerify: false }],
    users: [{ name: 'admin', token: info.token }],
    contexts: [{ name: 'raykeeper-local', cluster: 'raykeeper-local', user: 'admin', ...(namespace ? { namespace } : {}) }],
    currentContext: 'raykeeper-local',
  });
  return kc;
}

export function tail(path: string, lines = 30): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Polls `probe` until it returns true; fails early when `proc` exits or when the deadline passes. */
export async function waitUntil(
  what: string,
  proc: Pick<Supervised, 'exited'>,
  logPath: string,
  deadline: number,
  probe: () => Promise<boolean>,
): Promise<void> {
  let exited: { code: number | null; signal: string | null } | undefined;
  void proc.exited.then((e) => (exited = e));
  for (;;) {
    if (exited)
      throw new Error(`${what} exited (code ${exited.code}, signal ${exited.signal}) before it was ready; ${logPath}:\n${tail(logPath)}`);
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} not ready in time; ${logPath}:\n${tail(logPath)}`);
    await sleep(100);
  }
}

export function logFd(path: string): number {
  return openSync(path, 'a', 0o600);
}

async function startOnce(
  options: StartOptions,
  binaries: ControlPlaneBinaries,
  dir: string,
  progress: (m: string) => void,
): Promise<ControlPlaneInfo> {
  const ownerPid = options.ownerPid ?? process.pid;
  const deadline = Date.now() + (options.readyTimeoutMs ?? 180_000);
  const env = loopbackEnv(process.env, options.node?.noProxy ?? []);
  const host = options.node?.address ?? '127.0.0.1';
  const supervise = { detached: options.detached ?? false, watchPid: ownerPid, graceSeconds: 5 };
  const started: Supervised[] = [];
  try {
    // etcd
    const [clientPort, peerPort] = [await freePort(), await freePort()];
    const etcdUrl = `http://127.0.0.1:${clientPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const etcdLog = join(dir, 'etcd.log');
    const etcdFd = logFd(etcdLog);
    progress(`starting etcd ${binaries.etcdVersion} on ${etcdUrl}`);
    const etcd = await spawnSupervised(
      binaries.etcd,
      [
        '--name=raykeeper',
        `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=raykeeper=${peerUrl}`,
        '--unsafe-no-fsync',
        '--log-level=warn',
      ],
      { ...supervise, env, cwd: dir, stdio: ['ignore', etcdFd, etcdFd] },
    );
    closeSync(etcdFd);
    started.push(etcd);
    await waitUntil('etcd', etcd, etcdLog, deadline, async () => {
      const r = await get(`${etcdUrl}/health`, { timeoutMs: 2000 });
      return r.status === 200 && JSON.parse(r.body).health === 'true';
    });

    // kube-apiserver
    const token = randomBytes(24).toString('hex');
    const certDir = join(dir, 'certs');
    await mkdir(certDir, { recursive: true, mode: 0o700 });
    const tokenFile = join(dir, 'tokens.csv');
    await writeFile(tokenFile, `${token},admin,admin-uid,"system:masters"\n`, { mode: 0o600 });
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const saKey = join(dir, 'sa.key');
    const saPub = join(dir, 'sa.pub');
    await writeFile(saKey, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    await writeFile(saPub, publicKey.export({ type: 'spki', format: 'pem' }), { mode: 0o644 });
    const port = await freePort(host);
    const server = `https://${host}:${port}`;
    const apiLog = join(dir, 'kube-apiserver.log');
    const apiFd = logFd(apiLog);
    progress(`starting kube-apiserver ${binaries.kubeVersion} on ${server}`);
    const apiserver = await spawnSupervised(
      binaries.kubeApiserver,
      [
        `--etcd-servers=${etcdUrl}`,
        `--secure-port=${port}`,
        `--bind-address=${host}`,
        `--advertise-address=${host}`,
        `--cert-dir=${certDir}`,
        `--token-auth-file=${tokenFile}`,
        ...(options.node
          ? [
              '--authorization-mode=Node,RBAC',
              '--enable-admission-plugins=NodeRestriction',
              `--client-ca-file=${options.node.clientCaFile}`,
              `--kubelet-client-certificate=${options.node.kubeletClientCertFile}`,
              `--kubelet-client-key=${options.node.kubeletClientKeyFile}`,
            ]
          : ['--authorization-mode=RBAC', '--disable-admission-plugins=ServiceAccount']),
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--service-account-key-file=${saPub}`,
        `--service-account-signing-key-file=${saKey}`,
        `--service-cluster-ip-range=${options.node?.serviceClusterIpRange ?? SERVICE_CLUSTER_IP_RANGE}`,
        '--allow-privileged=true',
        '--profiling=false',
        ...(options.apiserverArgs ?? []),
      ],
      { ...supervise, env, cwd: dir, stdio: ['ignore', apiFd, apiFd] },
    );
    closeSync(apiFd);
    started.push(apiserver);
    const caPath = join(certDir, 'apiserver.crt');
    let caCert = '';
    await waitUntil('kube-apiserver', apiserver, apiLog, deadline, async () => {
      if (!caCert) {
        if (!existsSync(caPath)) return false;
        caCert = await readFile(caPath, 'utf8');
        if (!caCert.includes('END CERTIFICATE')) {
          caCert = '';
          return false;
        }
      }
      const r = await get(`${server}/readyz`, { ca: caCert, token, timeoutMs: 5000 });
      return r.status === 200;
    });

    // One more watchdog over both that also removes the directory when the owner dies without stop().
    const janitor = startWatchdog(ownerPid, [apiserver.pid, etcd.pid], 5, dir);
    const kubeconfigPath = options.kubeconfigPath ?? join(dir, 'kubeconfig');
    const info: ControlPlaneInfo = {
      server,
      token,
      caCert,
      kubeconfigPath,
      dir,
      etcdUrl,
      pids: { etcd: etcd.pid, kubeApiserver: apiserver.pid },
      watchdogPids: [...started.map((s) => s.watchdogPid), janitor].filter((p): p is number => p !== undefined),
      ownerPid,
      versions: { etcd: binaries.etcdVersion, kubernetes: binaries.kubeVersion },
    };
    await mkdir(dirname(kubeconfigPath), { recursive: true });
    await writeFile(kubeconfigPath, stringify(kubeconfigDocument(info)), { mode: 0o600 });
    await chmod(kubeconfigPath, 0o600);

    const crdsDir = options.crdsDir ?? DEFAULT_CRDS_DIR;
    if (crdsDir !== false) {
      progress(`applying CRDs from ${crdsDir}`);
      const kube = new KubeClient(kubeConfigFor(info));
      try {
        await applyCrds(kube, crdsDir, Math.max(10_000, deadline - Date.now()));
      } finally {
        kube.close();
      }
    }
    return info;
  } catch (err) {
    for (const s of started.reverse()) await s.stop(2000);
    throw err;
  }
}

/**
 * Starts etcd and kube-apiserver on free loopback ports, waits for /readyz, writes a kubeconfig and
 * applies our CRDs. Throws MissingBinariesError when the binaries are not built (builds nothing).
 */
export async function startControlPlane(options: StartOptions = {}): Promise<ControlPlane> {
  const binaries = options.binaries ?? requireBinaries();
  const progress = options.onProgress ?? (() => {});
  let lastError: unknown;
  // A free port can be taken between our probe and the child's bind: retry a couple of times.
  for (let attempt = 1; attempt <= 3; attempt++) {
    const dir = await mkdtemp(join(options.tmpRoot ?? tmpdir(), 'raykeeper-cp-'));
    // If this process dies before stop(), the exit hook removes the directory (a detached control
    // plane's directory is removed by stopControlPlane, called by whoever owns it).
    const forget = options.detached ? () => false : onExitCleanup(() => rmSync(dir, { recursive: true, force: true }));
    try {
      const info = await startOnce(options, binaries, dir, progress);
      progress(`control plane ready: ${info.server} (kubeconfig ${info.kubeconfigPath})`);
      const handle = controlPlaneHandle(info);
      const stop = handle.stop;
      return { ...handle, stop: () => stop().finally(() => forget()) };
    } catch (err) {
      forget();
      lastError = err;
      await rm(dir, { recursive: true, force: true });
      const message = err instanceof Error ? err.message : String(err);
      if (!/address already in use|bind: /i.test(message)) break;
      progress(`port conflict, retrying (${attempt}/3)`);
    }
  }
  throw lastError;
}

/** A handle on a control plane known by its info (e.g. read from the shared test state file). */
export function controlPlaneHandle(info: ControlPlaneInfo): ControlPlane {
  let stopping: Promise<void> | undefined;
  return {
    info,
    kubeConfig: (namespace?: string) => kubeConfigFor(info, namespace),
    stop: () => (stopping ??= stopControlPlane(info)),
  };
}

/** Stops a control plane by its pids (apiserver first, then etcd), kills its watchdogs, removes its directory. */
export async function stopControlPlane(info: ControlPlaneInfo): Promise<void> {
  await terminate([info.pids.kubeApiserver], 10_000);
  await terminate([info.pids.etcd], 5_000);
  await terminate(
    info.watchdogPids.map((p) => -p),
    1_000,
  );
  await rm(info.dir, { recursive: true, force: true });
}
