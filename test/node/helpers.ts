// Shared by the real-node suite (`npm run test:cluster`, needs root): one node per tap run (its bridge
// is machine-wide), the built kubectl against it, and what the host looks like (to prove stop() leaves
// nothing behind).
import { spawnSync } from 'node:child_process';
import type { Test } from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { requireKubeCommand } from '../../localcluster/binaries.ts';
import { KubeClient } from '../../kube/client.ts';
import { startKubeletDev, type KubeletDevEnvironment } from '../../dev/kubelet.ts';
import type { Pod } from '../../kube/model.ts';
import { EVENTS, PODS } from '../../kube/resources.ts';
import { until } from '../helpers/until.ts';
import { RAY_IMAGE } from '../../src/ray-release.ts';
import { NODE_NETWORK } from '../../localcluster/node/config.ts';
import { FIXED_HOST_PATHS, iptablesRules, kubepodsCgroups, readSysctls } from '../../localcluster/node/host.ts';

export { until } from '../helpers/until.ts';

export interface KubectlResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built kubectl against `kubeconfig`; `input` goes to stdin. */
export function kubectl(kubeconfig: string, args: string[], input?: string): KubectlResult {
  const r = spawnSync(requireKubeCommand('kubectl'), ['--kubeconfig', kubeconfig, ...args], { encoding: 'utf8', input, timeout: 120_000 });
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? r.error?.message ?? '' };
}

export interface HostState {
  iptables: Record<string, string[]>;
  sysctls: Record<string, string>;
  mounts: string[];
  netns: string[];
  links: string[];
  kubepods: string[];
  fixedPaths: string[];
  processes: string[];
}

const NODE_PROCESSES =
  /^(containerd|containerd-shim\S*|kubelet|kube-proxy|kube-scheduler|kube-controller-manager|dnsmasq|runc|etcd|kube-apiserver)$/;

/** Every host fact the node touches (processes: only ours, by command name and the node's paths). */
export async function hostState(): Promise<HostState> {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(' ')[4]!)
    .sort();
  const processes: string[] = [];
  for (const pid of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (NODE_PROCESSES.test(comm) && (cmdline.includes('/tmp/raykeeper-node-') || cmdline.includes(NODE_NETWORK.gateway)))
        processes.push(`${pid} ${comm}`);
    } catch {
      // gone
    }
  }
  return {
    iptables: await iptablesRules(),
    sysctls: readSysctls(),
    mounts,
    netns: existsSync('/run/netns') ? readdirSync('/run/netns') : [],
    links: readdirSync('/sys/class/net').filter((l) => l === NODE_NETWORK.bridge || l.startsWith('veth')),
    kubepods: kubepodsCgroups(),
    fixedPaths: FIXED_HOST_PATHS.filter((p) => existsSync(p)),
    processes,
  };
}

/** Asserts that the host is back to `before`: no node process, and every fact the node touches restored. */
export async function assertHostRestored(t: Test, before: HostState): Promise<void> {
  const after = await hostState();
  t.same(after.processes, [], 'no node process is left');
  t.same(after.kubepods, before.kubepods, 'kubepods cgroups');
  t.same(after.netns, before.netns, 'network namespaces');
  t.same(after.links, before.links, 'bridge and veths');
  t.same(after.iptables, before.iptables, 'iptables and ip6tables rules');
  t.same(after.sysctls, before.sysctls, 'sysctls');
  t.same(after.fixedPaths, before.fixedPaths, '/var/lib/kubelet, /var/log/containers, /run/netns, ...');
  const nodeMount = (m: string): boolean =>
    m.includes('raykeeper-node') || m.includes('kubelet') || m.includes('netns') || m.includes('containerd');
  t.same(
    after.mounts.filter((m) => nodeMount(m) && !before.mounts.includes(m)),
    [],
    'mounts',
  );
}

export interface NodeTestEvent {
  lastTimestamp?: string;
  reason: string;
  message: string;
  involvedObject: { kind: string; name: string };
}

/** Every Event in the namespace, as the API server lists them. */
export async function namespaceEvents(kube: KubeClient, namespace: string): Promise<NodeTestEvent[]> {
  return (await kube.list({ ...EVENTS, namespace })).items as NodeTestEvent[];
}

/**
 * Asserts, from the Events that outlive them (the Job and its pod are garbage-collected with the
 * RayCluster), that the cluster's Redis cleanup Job completed as a pod the kubelet started from our image
 * (the controller's RAYKEEPER_IMAGE: raykeeper:0.1.0, i.e. docker.io/library/raykeeper:0.1.0).
 */
export async function assertCleanupJobRan(t: Test, kube: KubeClient, namespace: string, cluster: string): Promise<void> {
  const events = await namespaceEvents(kube, namespace);
  const jobName = `${cluster}-redis-cleanup`;
  t.ok(
    events.some((e) => e.involvedObject.kind === 'Job' && e.involvedObject.name === jobName && e.reason === 'Completed'),
    'the job controller saw the Job complete',
  );
  const podEvents = events.filter((e) => e.involvedObject.kind === 'Pod' && e.involvedObject.name.startsWith(`${jobName}-`));
  t.ok(
    podEvents.some((e) => e.reason === 'Started'),
    'the kubelet started the Job pod',
  );
  t.ok(
    podEvents.some((e) => e.reason === 'Pulled' && /image "(docker\.io\/library\/)?raykeeper:0\.1\.0"/.test(e.message)),
    'from our image',
  );
}

export interface NodeUnderTest {
  env: KubeletDevEnvironment;
  kube: KubeClient;
  /** Stops the node (once) and asserts the host is as it was before the start. */
  stopAndAssertRestored(t: Test): Promise<void>;
}

/** `raykeeper dev --kubelet` for one test file; a file that ends early still stops its node. */
export async function nodeUnderTest(t: Test): Promise<NodeUnderTest> {
  const before = await hostState();
  const env = await startKubeletDev({ stateDir: t.testdir(), progress: (m) => t.comment(m) });
  let stopped = false;
  t.teardown(async () => {
    if (!stopped) await env.stop();
  });
  const kube = new KubeClient(env.cluster.controlPlane.kubeConfig());
  return {
    env,
    kube,
    async stopAndAssertRestored(tt) {
      kube.close();
      await env.stop();
      stopped = true;
      await assertHostRestored(tt, before);
    },
  };
}

/** Ready and not terminating. */
export function podReady(p: Pod): boolean {
  return !p.metadata.deletionTimestamp && (p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false);
}

/**
 * Waits until exactly `count` pods of the selector are there, all Ready; a timeout names what was seen
 * (name, phase, conditions), so a failure says why.
 */
export async function readyPods(kube: KubeClient, namespace: string, selector: string, count: number, ms: number): Promise<Pod[]> {
  const list = async () => (await kube.list(PODS.at(namespace), { labelSelector: selector })).items;
  return until(
    async () => {
      const ps = await list();
      return ps.length === count && ps.every(podReady) ? ps : undefined;
    },
    `${count} pods ${selector} Ready`,
    ms,
    2000,
  ).catch(async (err: Error) => {
    const seen = (await list()).map((p) => ({ name: p.metadata.name, phase: p.status?.phase, conditions: p.status?.conditions }));
    throw new Error(`${err.message}: ${JSON.stringify(seen)}`);
  });
}

/** A Ray container of the node's image (never pulled), a CPU limit of 1 and the given requests. */
export function rayContainer(name: string, cpu: string, memory: string) {
  return { name, image: RAY_IMAGE, imagePullPolicy: 'Never', resources: { limits: { cpu: '1', memory }, requests: { cpu, memory } } };
}
