// The containers the chart renders run as rendered (no kubelet here, so we run them as local processes,
// with the rendered args and env, the Secret's files where the volume would be):
//   - the webhook serves TLS with the chart's generated certificate, verified against the chart's CA for
//     the Service's DNS name (what the API server checks), and honours the gate value;
//   - the controller accepts the args of every mode and starts against the real kube-apiserver, and runs
//     on the chart's RBAC alone (ClusterRole, or Roles in the watched namespace; the Lease Role).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { stringify } from 'yaml';
import { applyObject, Discovery, type KubeObject } from '../../localcluster/apply.ts';
import { kubeconfigDocument } from '../../localcluster/control-plane.ts';
import { FINALIZER, FT, rayCluster, review } from '../admission/fixtures.ts';
import { kubeconfigFile, serviceAccountToken, testNamespace } from '../helpers/control-plane.ts';
import { decodePatch, httpsCall } from '../webhook/helpers.ts';
import { find, requireHelm, template } from './helm.ts';

const BIN = fileURLToPath(new URL('../../bin/raykeeper.js', import.meta.url));
requireHelm();

interface Container {
  args: string[];
  env: Array<{ name: string; value?: string }>;
}

/** The container's literal env values, as the kubelet would set them (fieldRefs given by the caller). */
function envOf(c: Container, refs: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, ...refs };
  for (const e of c.env) if (e.value !== undefined) env[e.name] = e.value;
  return env;
}

/**
 * Starts `raykeeper <args>`; resolves with the match once `ready` matches its output (the process keeps
 * running until stop() or the test's end), rejects with the output if it exits first.
 */
function runUntil(
  t: Test,
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp,
  timeoutMs = 90_000,
): Promise<{ match: RegExpExecArray; stop: () => void }> {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`raykeeper ${args.join(' ')}: no ${ready} within ${timeoutMs} ms: ${out}`)), timeoutMs);
    const check = (c: Buffer) => {
      out += c.toString();
      const m = ready.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ match: m, stop: () => child.kill('SIGTERM') });
      }
    };
    child.stdout.on('data', check);
    child.stderr.on('data', check);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`raykeeper ${args.join(' ')} exited (${code}) before ${ready}: ${out}`));
    });
  });
}

async function webhookAnswers(t: Test, objs: KubeObject[], namespace: string) {
  const deployment = find(objs, 'Deployment', 'raykeeper-webhook');
  const container: Container = deployment.spec.template.spec.containers[0];
  const mount = container as unknown as { volumeMounts: Array<{ name: string; mountPath: string }> };
  const tlsPath = mount.volumeMounts.find((m) => m.name === 'tls')!.mountPath;
  const secret = find(objs, 'Secret', deployment.spec.template.spec.volumes[0].secret.secretName);
  const dir = t.testdir();
  for (const f of ['tls.crt', 'tls.key']) await writeFile(join(dir, f), Buffer.from(secret.data[f], 'base64'), { mode: 0o600 });
  const args = [...container.args.map((a) => a.replace(tlsPath, dir)), '--host', '127.0.0.1', '--port', '0'];
  const { match } = await runUntil(t, args, envOf(container, {}), /"port":(\d+),"msg":"admission webhook listening/);
  const port = Number(match[1]);
  const ca = Buffer.from(secret.data['ca.crt'], 'base64').toString();
  const servername = `raykeeper-webhook.${namespace}.svc`;
  const ready = await httpsCall(port, '/readyz', { ca, servername });
  t.equal(ready.status, 200, `TLS verified with the chart's CA for ${servername}`);
  const wrongName = await httpsCall(port, '/readyz', { ca, servername: 'raykeeper-webhook.elsewhere.svc' }).then(
    () => 'accepted',
    (e: Error) => e.message,
  );
  t.match(wrongName, /altnames|Hostname/, 'and only for the Service names');
  const answer = await httpsCall(port, '/mutate-ray-io-v1-raycluster', {
    ca,
    servername,
    body: JSON.stringify(review('RayCluster', 'CREATE', rayCluster({ annotations: { [FT]: 'true' } }))),
  });
  t.equal(answer.status, 200);
  return decodePatch(JSON.parse(answer.body).response.patch);
}

const addsFinalizer = (patch: Array<{ value?: unknown }>) => JSON.stringify(patch).includes(FINALIZER);

t.test('the webhook container: the generated certificate serves, the gate value is honoured', async (t) => {
  const on = await webhookAnswers(t, template({}, { namespace: 'ops' }), 'ops');
  t.ok(addsFinalizer(on), 'gcsFtRedisCleanup true: the cleanup finalizer is added');
  const off = await webhookAnswers(t, template({ gcsFtRedisCleanup: false }, { namespace: 'ops' }), 'ops');
  t.notOk(addsFinalizer(off), 'gcsFtRedisCleanup false: no finalizer');
});

t.test("the controller container: every mode's args are accepted and it starts", async (t) => {
  const release = await testNamespace(t);
  const watched = await testNamespace(t);
  const kubeconfig = await kubeconfigFile(t, release.cp, release.name);
  const modes: Record<string, unknown> = {
    default: {},
    companion: { companion: { enabled: true } },
    watchNamespace: { controller: { watchNamespaces: [watched.name] } },
    singleController: { controller: { replicas: 1, leaderElection: { enabled: false } } },
    cleanupJob: {
      controller: {
        workers: 2,
        qps: 50,
        burst: 80,
        cleanupJob: { image: 'x:1', cpu: '500m', memory: '1Gi', imagePullPolicy: 'Always', imagePullSecrets: ['a'] },
        extraArgs: ['--resync-period=300'],
      },
    },
  };
  for (const [name, values] of Object.entries(modes)) {
    const container: Container = find(template(values, { namespace: release.name }), 'Deployment', 'raykeeper-controller').spec.template
      .spec.containers[0];
    const env = envOf(container, { POD_NAMESPACE: release.name, POD_NAME: `controller-${name}` });
    // $(VAR) in args is expanded by the kubelet from the container's env.
    const args = [
      ...container.args.map((a) => a.replace(/\$\((\w+)\)/g, (_, v: string) => env[v] ?? '')),
      '--health-port=0',
      '--kubeconfig',
      kubeconfig,
      '--lease-name',
      `raykeeper-test-${name}`,
    ];
    const { match, stop } = await runUntil(
      t,
      args,
      env,
      /"watchNamespace":"([^"]+)","leaderElect":(true|false),"shards":(\d+),"workers":(\d+),"qps":([\d.]+),"burst":(\d+),"msg":"controller starting"/,
    );
    stop();
    t.same(
      match.slice(1, 7),
      [
        name === 'watchNamespace' ? watched.name : 'all',
        String(name !== 'singleController'),
        '1',
        name === 'cleanupJob' ? '2' : '4',
        name === 'cleanupJob' ? '50' : '0',
        name === 'cleanupJob' ? '80' : '0',
      ],
      `${name}: started (${container.args.slice(1).join(' ')})`,
    );
  }
});

t.test(
  "the controller runs on the chart's RBAC alone (its ServiceAccount's token): all namespaces, companion, one namespace",
  async (t) => {
    const release = await testNamespace(t);
    const watched = await testNamespace(t);
    const admin = release.kube;
    const discovery = new Discovery(admin);
    const modes: Record<string, unknown> = {
      all: {},
      companion: { companion: { enabled: true } },
      watchNamespace: { controller: { watchNamespaces: [watched.name] } },
    };
    for (const [name, values] of Object.entries(modes)) {
      // A release name of its own: the cluster-scoped RBAC never meets another test's.
      const rel = `rk-${randomBytes(3).toString('hex')}`;
      const objs = template(values, { release: rel, namespace: release.name });
      const rbac = objs.filter((o) => o.kind === 'ServiceAccount' || /Role/.test(o.kind));
      for (const o of rbac) await applyObject(admin, o, { discovery, fieldManager: 'raykeeper-test' });
      t.teardown(async () => {
        for (const o of rbac.filter((x) => !x.metadata.namespace)) await admin.delete(await discovery.refOf(o)).catch(() => {});
      });
      const sa = `${rel}-raykeeper-controller`;
      const token = await serviceAccountToken(admin, release.name, sa);
      const kubeconfig = join(t.testdir(), 'kubeconfig');
      await writeFile(kubeconfig, stringify(kubeconfigDocument({ ...release.cp.info, token }, release.name)), { mode: 0o600 });
      const container: Container = find(objs, 'Deployment', sa).spec.template.spec.containers[0];
      const env = envOf(container, { POD_NAMESPACE: release.name, POD_NAME: `controller-${name}` });
      const args = [
        ...container.args.map((a) => a.replace(/\$\((\w+)\)/g, (_, v: string) => env[v] ?? '')),
        '--health-port=0',
        '--kubeconfig',
        kubeconfig,
        '--lease-name',
        sa,
      ];
      // Started reconcilers: caches synced (list/watch allowed) and the Lease taken (leader election allowed).
      const { match, stop } = await runUntil(t, args, env, /"controller":"(\w+)","workers":\d+,"msg":"reconciler started"/);
      stop();
      t.equal(match[1], 'raycluster', `${name}: synced, leader, reconciling as ${sa}`);
    }
  },
);
