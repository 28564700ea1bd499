// The real Kubernetes control plane for tests: ONE per tap run, shared by every test file (tap runs each
// file as its own process), tests isolating themselves by namespace.
//
// tap's `before` script (test/setup/start.ts) starts etcd + kube-apiserver detached and writes their
// connection info to STATE_FILE; the `after` script (test/setup/stop.ts) stops them. getControlPlane()
// reads that file. Without it (one file run by hand: `npx tap test/localcluster/x.test.ts`), it starts a
// private control plane for this process and stops it when the file's tests end.
//
// Missing binaries are a FAILURE, not a skip: run tools/build-control-plane.sh (CI does it first).
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  type ControlPlane,
  type ControlPlaneInfo,
  controlPlaneHandle,
  kubeconfigDocument,
  startControlPlane,
} from '../../localcluster/control-plane.ts';
import { get } from '../../localcluster/net.ts';
import { isAlive } from '../../localcluster/process.ts';
import { KubeClient, type ResourceRef } from '../../kube/client.ts';
import { NAMESPACES } from '../../kube/resources.ts';
import { readState, STATE_FILE } from './control-plane-state.ts';

export { readState, STATE_FILE, stateFile, type ControlPlaneState } from './control-plane-state.ts';

export interface TestControlPlane extends ControlPlane {
  /** true: started by the `before` script for the whole run; false: private to this test process. */
  shared: boolean;
}

/** The minimum of a tap Test the helpers need. */
export interface Teardownable {
  name: string;
  teardown(fn: () => unknown): void;
}

async function reachable(info: ControlPlaneInfo): Promise<boolean> {
  if (!isAlive(info.pids.kubeApiserver) || !isAlive(info.pids.etcd)) return false;
  try {
    return (await get(`${info.server}/readyz`, { ca: info.caCert, token: info.token, timeoutMs: 5000 })).status === 200;
  } catch {
    return false;
  }
}

let current: Promise<TestControlPlane> | undefined;

async function resolveControlPlane(): Promise<TestControlPlane> {
  const state = readState();
  if (state && 'error' in state) throw new Error(`the shared test control plane could not start: ${state.error}`);
  if (state && (await reachable(state.info))) {
    // Shared: stopping it is the `after` script's job.
    return { ...controlPlaneHandle(state.info), stop: async () => {}, shared: true };
  }
  if (state) t.comment(`ignoring stale ${STATE_FILE} (its control plane is gone); starting a private one`);
  const cp = await startControlPlane();
  t.teardown(() => cp.stop());
  return { ...cp, shared: false };
}

/**
 * The control plane for this test process (shared or private; memoised). Rejects with the build
 * instruction when the binaries are missing, so tests needing Kubernetes fail clearly.
 */
export function getControlPlane(): Promise<TestControlPlane> {
  current ??= resolveControlPlane();
  return current;
}

/** A DNS-1123 label from a test name plus randomness: unique per test, readable in `kubectl get ns`. */
export function namespaceName(testName: string): string {
  const slug = testName
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  return `rk-${slug || 'test'}-${randomBytes(3).toString('hex')}`;
}

export interface TestNamespace {
  name: string;
  cp: TestControlPlane;
  /** Admin KubeConfig whose default namespace is this one (client-node: kc.makeApiClient(...)). */
  kubeConfig: KubeConfig;
  /** Admin API client (the project's one, kube/client.ts). */
  kube: KubeClient;
}

/**
 * Creates a namespace of its own for test `tt` on the shared control plane; deletes it on teardown
 * (without kube-controller-manager it then stays Terminating with its objects: harmless, etcd is
 * thrown away with the run).
 */
export async function testNamespace(tt: Teardownable, labels: Record<string, string> = {}): Promise<TestNamespace> {
  const cp = await getControlPlane();
  const name = namespaceName(tt.name);
  const kube = new KubeClient(cp.kubeConfig(name));
  await kube.create(NAMESPACES, { metadata: { name, labels: { 'raykeeper.test/namespace': 'true', ...labels } } });
  tt.teardown(async () => {
    await kube.delete({ ...NAMESPACES, name }); // false when already gone
    kube.close();
  });
  return { name, cp, kubeConfig: cp.kubeConfig(name), kube };
}

/** What a ServiceAccount's `token` subresource answers a create with (an authentication.k8s.io/v1 TokenRequest). */
interface TokenRequest {
  status: { token: string; expirationTimestamp: string };
}

/** A token of ServiceAccount `namespace/name`, valid for 10 minutes (a create of its `token` subresource). */
export async function serviceAccountToken(kube: KubeClient, namespace: string, name: string): Promise<string> {
  const ref: ResourceRef<TokenRequest> = { version: 'v1', plural: 'serviceaccounts', namespace, name, subresource: 'token' };
  return (await kube.create(ref, { spec: { expirationSeconds: 600 } })).status.token;
}

/**
 * Writes a kubeconfig file (admin token, verified TLS) whose context defaults to `namespace`, for
 * child processes (`KUBECONFIG=...`); removed on teardown.
 */
export async function kubeconfigFile(tt: Teardownable, cp: ControlPlane, namespace = 'default'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'raykeeper-kubeconfig-'));
  const path = join(dir, 'kubeconfig');
  await writeFile(path, stringify(kubeconfigDocument(cp.info, namespace)), { mode: 0o600 });
  tt.teardown(() => rm(dir, { recursive: true, force: true }));
  return path;
}
