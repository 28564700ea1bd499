// The real node (`npm run test:cluster`, root): Ready; a pod runs and its log is read through the
// apiserver and kubelet; a pod resolves a Service by its cluster DNS name and reaches it through
// kube-proxy; stop() leaves the host exactly as it found it.
import t from 'tap';
import { stringify } from 'yaml';
import { buildImages } from '../../localcluster/node/images.ts';
import { nodeReady, startNodeCluster } from '../../localcluster/node/node.ts';
import { KubeClient } from '../../kube/client.ts';
import { PODS, SERVICES } from '../../kube/resources.ts';
import { assertHostRestored, hostState, kubectl, until } from './helpers.ts';

const BUSYBOX = 'docker.io/library/busybox:1.35';

const before = await hostState();
const images = await buildImages(['pause', 'busybox']);
const cluster = await startNodeCluster({ images: images.map((i) => i.archive), crdsDir: false, onProgress: (m) => t.comment(m) });
let stopped = false;
t.teardown(async () => {
  if (!stopped) await cluster.stop();
});
const kc = cluster.kubeconfigPath;
const kube = new KubeClient(cluster.controlPlane.kubeConfig());
t.teardown(() => kube.close());

const pod = (name: string, command: string, extra: object = {}): object => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, labels: { app: name } },
  spec: {
    restartPolicy: 'Never',
    containers: [{ name: 'main', image: BUSYBOX, imagePullPolicy: 'Never', command: ['/bin/busybox', 'sh', '-c', command] }],
    ...extra,
  },
});

async function phase(name: string): Promise<string | undefined> {
  const p = await kube.get(PODS.at('default', name));
  return p.status?.phase;
}

t.test('node Ready', async (t) => {
  t.equal(cluster.nodeName, 'localhost');
  t.ok(await nodeReady(kube), 'Ready condition True');
  const r = kubectl(kc, ['get', 'node', 'localhost', '-o', 'jsonpath={.status.nodeInfo.containerRuntimeVersion}']);
  t.match(r.stdout, /^containerd:\/\/1\./, r.stderr);
});

t.test('a pod runs and its log is read', async (t) => {
  const r = kubectl(kc, ['apply', '-f', '-'], stringify(pod('hello', 'echo hello from a real pod')));
  t.equal(r.status, 0, r.stderr);
  const done = await until(
    async () => {
      const p = await phase('hello');
      return p === 'Succeeded' || p === 'Failed' ? p : undefined;
    },
    'pod hello to finish',
    120_000,
  );
  t.equal(done, 'Succeeded');
  const logs = kubectl(kc, ['logs', 'hello']);
  t.equal(logs.stdout.trim(), 'hello from a real pod', logs.stderr);
});

t.test('a pod resolves a Service by name and reaches it through kube-proxy', async (t) => {
  const server = pod('web', 'while true; do echo hello-through-the-service | nc -l -p 8080; done', { restartPolicy: 'Always' });
  const service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web' },
    spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
  };
  t.equal(kubectl(kc, ['apply', '-f', '-'], [stringify(server), stringify(service)].join('---\n')).status, 0);
  await until(async () => (await phase('web')) === 'Running', 'pod web to run', 120_000);
  // Each try is a fresh connection; the server may need a moment to listen and kube-proxy to sync.
  const client = pod(
    'client',
    'nslookup web.default.svc.cluster.local 2>&1; for i in $(seq 60); do out=$(nc -w 2 web 80 </dev/null) && [ -n "$out" ] && echo "$out" && exit 0; sleep 1; done; exit 1',
  );
  t.equal(kubectl(kc, ['apply', '-f', '-'], stringify(client)).status, 0);
  const done = await until(
    async () => {
      const p = await phase('client');
      return p === 'Succeeded' || p === 'Failed' ? p : undefined;
    },
    'pod client to finish',
    180_000,
  );
  const logs = kubectl(kc, ['logs', 'client']).stdout;
  t.equal(done, 'Succeeded', logs);
  const clusterIP = (await kube.get(SERVICES.at('default', 'web'))).spec?.clusterIP;
  if (!clusterIP) throw new Error('the Service web has no ClusterIP');
  t.match(logs, new RegExp(`Address[^\\n]*${clusterIP.replaceAll('.', '\\.')}`), 'the cluster DNS answers with the ClusterIP');
  t.match(logs, /hello-through-the-service/, 'and the Service forwards to the pod');
});

t.test('stop leaves no processes, mounts, netns, links, iptables rules, cgroups, sysctls or paths behind', async (t) => {
  const leftovers = await cluster.stop();
  stopped = true;
  t.same(leftovers, [], 'every clean-up step succeeded');
  await assertHostRestored(t, before);
});
