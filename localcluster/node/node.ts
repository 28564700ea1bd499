// A real single-node Kubernetes on this machine, beside the local etcd + kube-apiserver: containerd
// (runc), kube-controller-manager, kube-scheduler, kubelet, kube-proxy (iptables), a bridge CNI and a
// cluster DNS (dnsmasq fed from the Services). Needs root. Pod and Service addresses exist only on the
// node's bridge and in the pods' network namespaces; an iptables guard drops anything the bridge would
// forward elsewhere. stop() stops everything and puts the host back (see host.ts).
import { closeSync, existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { generateCa, generateClientCertificate } from '../../certs/generate.ts';
import { crictlPath, requireBinaries, requireKubeCommand } from '../binaries.ts';
import { type ControlPlane, controlPlaneFiles, logFd, loopbackEnv, startControlPlane, tail, waitUntil } from '../control-plane.ts';
import { freePort } from '../net.ts';
import { spawnSupervised, type Supervised } from '../process.ts';
import { keepRunning, type Restarting } from '../restarting.ts';
import { KubeClient } from '../../kube/client.ts';
import { ENDPOINT_SLICES, NODES, SERVICEACCOUNTS, SERVICES } from '../../kube/resources.ts';
import {
  CNI_BIN_DIR,
  cniConfList,
  containerdConfig,
  controllerComponentsArgs,
  dnsHosts,
  endpointAddresses,
  dnsmasqArgs,
  kubeletConfig,
  kubeProxyConfig,
  NODE_NAME,
  NODE_NETWORK,
  nodeDirs,
  type NodeDirs,
  type NodeNetwork,
  type ServiceRecord,
} from './config.ts';
import { NODE_STATE_PREFIX, restoreHost, run, setUpNetwork, snapshotHost, sweepKilledNode } from './host.ts';
import { sleep } from '../../kube/backoff.ts';

export interface NodeClusterOptions {
  /** Where to write the admin kubeconfig (default <state dir>/kubeconfig). */
  kubeconfigPath?: string;
  /** CRDs to apply (default manifests/crds; false for none). */
  crdsDir?: string | false;
  /** OCI archives to import into containerd before the kubelet starts (the sandbox image among them). */
  images?: string[];
  onProgress?: (message: string) => void;
  /** How long each component may take to become ready (default 180 s). */
  readyTimeoutMs?: number;
}

export interface NodeCluster {
  controlPlane: ControlPlane;
  kubeconfigPath: string;
  nodeName: string;
  network: NodeNetwork;
  dirs: NodeDirs;
  /** Imports OCI archives into containerd's k8s.io namespace (what `ctr images import` does). */
  importImages(archives: string[]): Promise<void>;
  /** Stops everything and restores the host; resolves with what could not be cleaned (empty: clean). Idempotent. */
  stop(): Promise<string[]>;
}

/** How many times kube-controller-manager or kube-scheduler is started again before the node gives up. */
const COMPONENT_RESTARTS = 3;

/** The host commands the node runs, with what provides them (tools/setup.sh --node installs them). */
const HOST_COMMANDS: Array<[string, string]> = [
  ['containerd', 'containerd'],
  ['runc', 'runc'],
  ['ctr', 'containerd'],
  ['dnsmasq', 'dnsmasq-base'],
  ['iptables', 'iptables'],
  ['ip', 'iproute2'],
  ['conntrack', 'conntrack'],
];

async function which(command: string): Promise<string | undefined> {
  const out = await run('sh', ['-c', `command -v ${command} || true`]);
  return out.trim() || undefined;
}

/** Fails early, naming what is missing and how to get it. */
export async function checkNodePrerequisites(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('the real node needs root (containerd, kubelet, iptables, network namespaces, cgroups)');
  const missing: string[] = [];
  for (const [cmd, pkg] of HOST_COMMANDS) if (!(await which(cmd))) missing.push(`${cmd} (Debian package ${pkg})`);
  if (!existsSync(join(CNI_BIN_DIR, 'bridge'))) missing.push(`${CNI_BIN_DIR}/bridge (Debian package containernetworking-plugins)`);
  if (missing.length > 0) throw new Error(`missing for the real node: ${missing.join(', ')}; run: bash tools/setup.sh --node`);
  requireBinaries();
  for (const c of ['kubelet', 'kube-proxy', 'kube-scheduler', 'kube-controller-manager'] as const) requireKubeCommand(c);
  if (!existsSync(crictlPath())) throw new Error(`crictl is not built (${crictlPath()}); run: bash tools/setup.sh --node`);
}

function clientKubeconfig(server: string, caCert: string, cert: { cert: string; key: string }, user: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'raykeeper-local', cluster: { server, 'certificate-authority-data': Buffer.from(caCert).toString('base64') } }],
    users: [
      {
        name: user,
        user: {
          'client-certificate-data': Buffer.from(cert.cert).toString('base64'),
          'client-key-data': Buffer.from(cert.key).toString('base64'),
        },
      },
    ],
    contexts: [{ name: 'raykeeper-local', context: { cluster: 'raykeeper-local', user } }],
    'current-context': 'raykeeper-local',
  };
}

async function writePrivate(path: string, text: string): Promise<void> {
  await writeFile(path, text, { mode: 0o600 });
  await chmod(path, 0o600);
}

/** Node `name` is Ready (its Ready condition True). */
export async function nodeReady(kube: KubeClient, name = NODE_NAME): Promise<boolean> {
  const node = await kube.get({ ...NODES, name });
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

export async function startNodeCluster(options: NodeClusterOptions = {}): Promise<NodeCluster> {
  await checkNodePrerequisites();
  const progress = options.onProgress ?? (() => {});
  const timeoutMs = options.readyTimeoutMs ?? 180_000;
  const net = NODE_NETWORK;
  const swept = await sweepKilledNode(net);
  if (swept.length > 0) progress(`left by a node that was killed, removed: ${swept.join('; ')}`);
  const root = await mkdtemp(NODE_STATE_PREFIX);
  const dirs = nodeDirs(root);
  const logs = join(root, 'logs');
  for (const d of [
    dirs.containerdRoot,
    dirs.containerdState,
    dirs.cniConfDir,
    dirs.cniIpamDir,
    dirs.kubeletRoot,
    dirs.kubeletCerts,
    dirs.podLogs,
    dirs.volumePlugins,
    dirs.pki,
    dirs.dns,
    logs,
  ]) {
    await mkdir(d, { recursive: true, mode: 0o700 });
  }
  const snapshot = await snapshotHost();
  const env = loopbackEnv(process.env, [net.podCidr, net.serviceCidr, net.gateway]);
  const procs: Array<{ name: string; proc: Pick<Supervised, 'stop'> }> = [];
  let controlPlane: ControlPlane | undefined;
  let feeder: { stop(): Promise<void> } | undefined;
  let stopping: Promise<string[]> | undefined;

  const spawnComponent = async (name: string, command: string, args: string[]): Promise<{ proc: Supervised; log: string }> => {
    const log = join(logs, `${name}.log`);
    const fd = logFd(log);
    try {
      const proc = await spawnSupervised(command, args, {
        env,
        cwd: root,
        stdio: ['ignore', fd, fd],
        graceSeconds: 10,
        group: true,
        ownerStops: true,
      });
      procs.push({ name, proc });
      return { proc, log };
    } finally {
      closeSync(fd);
    }
  };
  // kube-controller-manager and kube-scheduler run as a kubelet runs them (static pods): started again
  // when they exit, with fresh ports (localcluster/restarting.ts says why).
  const spawnRestarting = async (
    name: string,
    command: string,
    argsFor: () => Promise<string[]>,
  ): Promise<{ proc: Restarting; log: string }> => {
    const start = async (): Promise<Supervised> => {
      const { proc } = await spawnComponent(name, command, await argsFor());
      procs.splice(
        procs.findIndex((p) => p.proc === proc),
        1,
      );
      return proc;
    };
    const log = join(logs, `${name}.log`);
    const proc = keepRunning(await start(), {
      start,
      limit: COMPONENT_RESTARTS,
      pauseMs: 1000,
      onRestart: (exit, attempt) =>
        progress(
          `${name} exited (code ${exit.code}, signal ${exit.signal}); starting it again (${attempt}/${COMPONENT_RESTARTS}): ${tail(log, 1)}`,
        ),
    });
    procs.push({ name, proc });
    return { proc, log };
  };
  const stopComponent = async (name: string): Promise<void> => {
    const i = procs.findIndex((p) => p.name === name);
    if (i < 0) return;
    const [entry] = procs.splice(i, 1);
    await entry?.proc.stop(10_000);
  };

  const doStop = async (): Promise<string[]> => {
    const errors: string[] = [];
    const step = async (what: string, fn: () => Promise<unknown>): Promise<void> => {
      try {
        await fn();
      } catch (err) {
        errors.push(`${what}: ${err instanceof Error ? err.message : String(err)}`);
      }
    };
    if (feeder) await step('dns feeder', () => feeder!.stop());
    await step('dnsmasq', () => stopComponent('dnsmasq'));
    // The kubelet first (it would restart what we remove), then every pod through the CRI: the CNI
    // plugins remove their veths, addresses and network namespaces, containerd its mounts.
    await step('kubelet', () => stopComponent('kubelet'));
    if (procs.some((p) => p.name === 'containerd')) {
      await step('crictl rmp', () =>
        run(
          crictlPath(),
          [
            '--runtime-endpoint',
            `unix://${dirs.containerdSocket}`,
            '--image-endpoint',
            `unix://${dirs.containerdSocket}`,
            '--timeout',
            '60s',
            'rmp',
            '--all',
            '--force',
          ],
          { timeoutMs: 120_000 },
        ),
      );
    }
    await step('kube-proxy', () => stopComponent('kube-proxy'));
    await step('kube-proxy --cleanup', () => run(requireKubeCommand('kube-proxy'), ['--cleanup'], { timeoutMs: 60_000 }));
    await step('kube-scheduler', () => stopComponent('kube-scheduler'));
    await step('kube-controller-manager', () => stopComponent('kube-controller-manager'));
    await step('containerd', () => stopComponent('containerd'));
    for (const { name } of [...procs].reverse()) await step(name, () => stopComponent(name));
    if (controlPlane) await step('control plane', () => controlPlane!.stop());
    errors.push(...(await restoreHost(snapshot, net, root, dirs.containerdSocket)));
    await step('state directory', () => rm(root, { recursive: true, force: true }));
    return errors;
  };
  const stop = (): Promise<string[]> => (stopping ??= doStop());

  try {
    progress(`network: bridge ${net.bridge} ${net.gateway}/${net.prefixLength}, pods ${net.podCidr}, services ${net.serviceCidr}`);
    await setUpNetwork(net);

    progress('cluster CA and client certificates');
    const ca = generateCa();
    const apiserverClient = generateClientCertificate({
      ca,
      commonName: 'kube-apiserver-kubelet-client',
      organizations: ['system:masters'],
    });
    const kubeletClient = generateClientCertificate({ ca, commonName: `system:node:${NODE_NAME}`, organizations: ['system:nodes'] });
    const pki = {
      caCert: join(dirs.pki, 'ca.crt'),
      caKey: join(dirs.pki, 'ca.key'),
      apiserverClientCert: join(dirs.pki, 'apiserver-kubelet-client.crt'),
      apiserverClientKey: join(dirs.pki, 'apiserver-kubelet-client.key'),
    };
    await writeFile(pki.caCert, ca.cert, { mode: 0o644 });
    await writePrivate(pki.caKey, ca.key);
    await writeFile(pki.apiserverClientCert, apiserverClient.cert, { mode: 0o644 });
    await writePrivate(pki.apiserverClientKey, apiserverClient.key);

    controlPlane = await startControlPlane({
      kubeconfigPath: options.kubeconfigPath ?? join(root, 'kubeconfig'),
      crdsDir: options.crdsDir,
      onProgress: progress,
      readyTimeoutMs: timeoutMs,
      node: {
        address: net.gateway,
        clientCaFile: pki.caCert,
        kubeletClientCertFile: pki.apiserverClientCert,
        kubeletClientKeyFile: pki.apiserverClientKey,
        serviceClusterIpRange: net.serviceCidr,
        noProxy: [net.podCidr, net.serviceCidr],
      },
    });
    const info = controlPlane.info;
    const cpFiles = controlPlaneFiles(info);
    const admin = info.kubeconfigPath;
    const deadline = (): number => Date.now() + timeoutMs;

    // containerd
    const containerdToml = join(root, 'containerd.toml');
    await writeFile(containerdToml, containerdConfig(dirs));
    await writeFile(join(dirs.cniConfDir, '10-raykeeper.conflist'), JSON.stringify(cniConfList(net, dirs), null, 2));
    progress(`starting containerd (${dirs.containerdSocket})`);
    const containerd = await spawnComponent('containerd', 'containerd', ['--config', containerdToml]);
    await waitUntil('containerd', containerd.proc, containerd.log, deadline(), async () => {
      if (!existsSync(dirs.containerdSocket)) return false;
      await run('ctr', ['--address', dirs.containerdSocket, 'version'], { timeoutMs: 5000 });
      return true;
    });
    const importImages = async (archives: string[]): Promise<void> => {
      for (const archive of archives) {
        progress(`importing ${archive}`);
        await run('ctr', ['--address', dirs.containerdSocket, '-n', 'k8s.io', 'images', 'import', archive], { timeoutMs: 600_000 });
      }
    };
    await importImages(options.images ?? []);

    // kube-controller-manager and kube-scheduler (admin kubeconfig; leader election off: one of each)
    progress('starting kube-controller-manager and kube-scheduler');
    await mkdir(join(root, 'kcm'), { mode: 0o700 });
    await mkdir(join(root, 'scheduler'), { mode: 0o700 });
    const args = async () =>
      controllerComponentsArgs({
        kubeconfig: admin,
        certDirs: { controllerManager: join(root, 'kcm'), scheduler: join(root, 'scheduler') },
        ports: { controllerManager: await freePort(), scheduler: await freePort() },
        serviceAccountKey: cpFiles.serviceAccountKey,
        rootCa: cpFiles.servingCa,
        serviceCidr: net.serviceCidr,
        signing: { cert: pki.caCert, key: pki.caKey },
      });
    const kcm = await spawnRestarting(
      'kube-controller-manager',
      requireKubeCommand('kube-controller-manager'),
      async () => (await args()).controllerManager,
    );
    const scheduler = await spawnRestarting('kube-scheduler', requireKubeCommand('kube-scheduler'), async () => (await args()).scheduler);

    // kubelet
    progress(`starting kubelet (node ${NODE_NAME})`);
    const kubeletKubeconfig = join(root, 'kubelet.kubeconfig');
    await writePrivate(kubeletKubeconfig, stringify(clientKubeconfig(info.server, info.caCert, kubeletClient, `system:node:${NODE_NAME}`)));
    const kubeletYaml = join(root, 'kubelet.yaml');
    await writeFile(
      kubeletYaml,
      stringify(kubeletConfig(net, dirs, { port: await freePort(), healthzPort: await freePort() }, pki.caCert)),
    );
    const kubelet = await spawnComponent('kubelet', requireKubeCommand('kubelet'), [
      `--config=${kubeletYaml}`,
      `--kubeconfig=${kubeletKubeconfig}`,
      `--root-dir=${dirs.kubeletRoot}`,
      `--cert-dir=${dirs.kubeletCerts}`,
      `--container-runtime-endpoint=unix://${dirs.containerdSocket}`,
      `--hostname-override=${NODE_NAME}`,
      `--node-ip=${net.gateway}`,
    ]);
    const kube = new KubeClient(controlPlane.kubeConfig());
    try {
      let ended: string | undefined;
      for (const c of [kcm, scheduler, containerd]) void c.proc.exited.then(() => (ended ??= c.log));
      // Ready for pods: the node is Ready and kube-controller-manager made the default ServiceAccount
      // (the ServiceAccount admission plugin rejects pods until then).
      await waitUntil('kubelet (node Ready) and kube-controller-manager', kubelet.proc, kubelet.log, deadline(), async () => {
        if (ended) return true; // reported below, with the log that says why
        if (!(await nodeReady(kube))) return false;
        await kube.get({ ...SERVICEACCOUNTS, namespace: 'default', name: 'default' });
        return true;
      });
      if (ended) throw new Error(`a node component exited before the node was ready; ${ended}:\n${tail(ended)}`);

      // kube-proxy
      progress('starting kube-proxy (iptables)');
      const proxyYaml = join(root, 'kube-proxy.yaml');
      await writeFile(proxyYaml, stringify(kubeProxyConfig(net, admin, { healthzPort: await freePort(), metricsPort: await freePort() })));
      await spawnComponent('kube-proxy', requireKubeCommand('kube-proxy'), [`--config=${proxyYaml}`]);

      // cluster DNS
      progress(`starting the cluster DNS (dnsmasq on ${net.gateway}:53)`);
      const hostsFile = join(dirs.dns, 'hosts');
      const servicesText = async (): Promise<string> => {
        const list = await kube.list(SERVICES);
        const slices = endpointAddresses((await kube.list(ENDPOINT_SLICES)).items);
        const records: ServiceRecord[] = list.items.map((s) => ({
          name: s.metadata.name ?? '',
          namespace: s.metadata.namespace ?? '',
          clusterIP: s.spec?.clusterIP,
          addresses: slices.get(`${s.metadata.namespace}/${s.metadata.name}`),
        }));
        return dnsHosts(records, net.clusterDomain);
      };
      let current = await servicesText();
      await writeFile(hostsFile, current, { mode: 0o644 });
      const dns = await spawnComponent('dnsmasq', 'dnsmasq', dnsmasqArgs(net, hostsFile));
      feeder = startDnsFeeder(kube, async () => {
        const next = await servicesText();
        if (next === current) return;
        current = next;
        await writeFile(hostsFile, next, { mode: 0o644 });
        dns.proc.child.kill('SIGHUP');
      });
    } catch (err) {
      kube.close();
      throw err;
    }
    progress(`node ${NODE_NAME} Ready`);
    return { controlPlane, kubeconfigPath: admin, nodeName: NODE_NAME, network: net, dirs, importImages, stop };
  } catch (err) {
    const leftovers = await stop();
    if (leftovers.length > 0) progress(`cleanup after the failed start left: ${leftovers.join('; ')}`);
    throw err;
  }
}

/** Re-syncs the DNS hosts file from the Services and EndpointSlices about once a second until stopped. */
function startDnsFeeder(kube: KubeClient, sync: () => Promise<void>): { stop(): Promise<void> } {
  let running = true;
  const loop = (async () => {
    while (running) {
      await sync().catch(() => {});
      await sleep(1000);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      kube.close();
    },
  };
}
