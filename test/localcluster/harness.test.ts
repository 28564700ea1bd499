// The local control plane harness itself: start, reach, stop, no orphans (also when its owner is
// SIGKILLed), the tap before/after scripts, and the missing-binaries failure.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import {
  controlPlaneBinaries,
  crictlPath,
  kubeCommandPath,
  MissingBinariesError,
  NODE_COMMANDS,
  REPO_ROOT,
  requireBinaries,
  requireKubeCommand,
} from '../../localcluster/binaries.ts';
import { type ControlPlaneInfo, kubeConfigFor, startControlPlane } from '../../localcluster/control-plane.ts';
import { isAlive, waitForExit } from '../../localcluster/process.ts';
import { KubeApiError, KubeClient, resourcePath } from '../../kube/client.ts';
import { CONFIGMAPS, CUSTOM_RESOURCE_DEFINITIONS, NAMESPACES } from '../../kube/resources.ts';
import { RAYCLUSTERS } from '../../src/types.ts';
import { getControlPlane, readState, testNamespace } from '../helpers/control-plane.ts';
import { sleep } from '../../kube/backoff.ts';

// Child node processes without tap's coverage instrumentation (it only slows them down here).
const plainEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k !== 'NODE_OPTIONS' && !k.startsWith('_TAPJS_') && k !== 'NODE_V8_COVERAGE'),
  ),
  ...extra,
});

const allPids = (info: ControlPlaneInfo): number[] => [info.pids.etcd, info.pids.kubeApiserver, ...info.watchdogPids];

async function tmp(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'raykeeper-harness-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

t.test('a private control plane starts, serves, and stops without leaving processes', async (t) => {
  const cp = await startControlPlane();
  let stopped = false;
  t.teardown(() => (stopped ? undefined : cp.stop()));
  const { info } = cp;
  for (const pid of allPids(info)) t.ok(isAlive(pid), `pid ${pid} runs`);
  t.match(info.server, /^https:\/\/127\.0\.0\.1:\d+$/);

  const kube = new KubeClient(cp.kubeConfig());
  t.teardown(() => kube.close());
  t.match((await kube.request<{ gitVersion: string }>('GET', '/version')).gitVersion, /^v1\.35\./, 'a 1.35 kube-apiserver');
  for (const name of ['rayclusters.ray.io', 'rayjobs.ray.io', 'raycronjobs.ray.io']) {
    const crd = await kube.get(CUSTOM_RESOURCE_DEFINITIONS.at(undefined, name));
    t.ok(
      crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'),
      `${name} Established`,
    );
  }

  // Token auth is real: a wrong token is refused; RBAC is on (no anonymous admin).
  const wrong = new KubeClient(kubeConfigFor({ ...info, token: 'wrong' }));
  const status = await wrong.list(NAMESPACES).then(
    () => 200,
    (err: KubeApiError) => err.statusCode,
  );
  t.equal(status, 401, 'a wrong token is 401');
  wrong.close();

  // The kubeconfig file works for kubectl and VERIFIES the server certificate (no insecure-skip).
  const kubeconfig = readFileSync(info.kubeconfigPath, 'utf8');
  t.match(kubeconfig, /certificate-authority-data: /);
  t.notMatch(kubeconfig, /insecure-skip-tls-verify/);
  const kubectl = spawnSync(requireKubeCommand('kubectl'), ['--kubeconfig', info.kubeconfigPath, 'get', '--raw', '/readyz'], {
    encoding: 'utf8',
  });
  t.equal(kubectl.stdout.trim(), 'ok', `kubectl through the kubeconfig: ${kubectl.stderr}`);

  const dir = info.dir;
  await cp.stop();
  stopped = true;
  for (const pid of allPids(info)) t.notOk(isAlive(pid), `pid ${pid} is gone after stop()`);
  t.notOk(existsSync(dir), 'the temporary directory is removed');
  await cp.stop(); // idempotent
});

t.test('the control plane dies with its owner, even on SIGKILL', async (t) => {
  const dir = await tmp(t);
  const script = join(dir, 'owner.ts');
  await writeFile(
    script,
    `import { startControlPlane } from ${JSON.stringify(join(REPO_ROOT, 'localcluster/control-plane.ts'))};
const cp = await startControlPlane({ crdsDir: false });
process.stdout.write(JSON.stringify(cp.info) + '\\n');
setInterval(() => {}, 1000);
`,
  );
  const owner = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'], env: plainEnv() });
  t.teardown(() => owner.kill('SIGKILL'));
  const info = await new Promise<ControlPlaneInfo>((resolve, reject) => {
    let out = '';
    owner.stdout.setEncoding('utf8');
    owner.stdout.on('data', (c: string) => {
      out += c;
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]!));
    });
    owner.on('exit', (code) => reject(new Error(`owner exited early (${code})`)));
  });
  for (const pid of allPids(info)) t.ok(isAlive(pid), `pid ${pid} runs`);
  owner.kill('SIGKILL');
  const gone = await waitForExit(allPids(info), 30_000);
  t.ok(gone, 'etcd, kube-apiserver and the watchdogs are gone after the owner was SIGKILLed');
  // The watchdog removes the directory a moment after the processes are gone.
  for (let i = 0; i < 50 && existsSync(info.dir); i++) await sleep(100);
  t.notOk(existsSync(info.dir), 'and the temporary directory');
});

t.test('tap before/after scripts: start a detached control plane, record it, stop it', async (t) => {
  const dir = await tmp(t);
  const state = join(dir, 'state.json');
  const env = plainEnv({ RAYKEEPER_TEST_CONTROL_PLANE: state });
  const start = spawnSync(process.execPath, [join(REPO_ROOT, 'test/setup/start.ts')], { env, encoding: 'utf8' });
  t.equal(start.status, 0, start.stderr);
  const recorded = readState(state);
  if (!recorded || !('info' in recorded)) throw new Error(`no control plane recorded: ${JSON.stringify(recorded)}`);
  const { info } = recorded;
  t.teardown(() => spawnSync(process.execPath, [join(REPO_ROOT, 'test/setup/stop.ts')], { env }));
  t.equal(info.ownerPid, process.pid, 'owned by the process that ran the script (tap)');
  t.ok(isAlive(info.pids.kubeApiserver), 'still running after the before script exited');
  const kube = new KubeClient(kubeConfigFor(info));
  t.equal((await kube.request<{ kind: string }>('GET', resourcePath(RAYCLUSTERS))).kind, 'RayClusterList', 'serves our CRDs');
  kube.close();

  const stop = spawnSync(process.execPath, [join(REPO_ROOT, 'test/setup/stop.ts')], { env, encoding: 'utf8' });
  t.equal(stop.status, 0, stop.stderr);
  for (const pid of allPids(info)) t.notOk(isAlive(pid), `pid ${pid} is gone after the after script`);
  t.notOk(existsSync(state), 'the state file is removed');
  t.notOk(existsSync(info.dir), 'the directory is removed');
});

t.test('missing binaries: a clear failure naming the build script, recorded by the before script', async (t) => {
  const empty = await tmp(t);
  const env = plainEnv({ RAYKEEPER_CACHE: empty, RAYKEEPER_ETCD: '', RAYKEEPER_KUBE_APISERVER: '' });
  t.throws(() => requireBinaries(env), MissingBinariesError);
  t.throws(() => requireBinaries(env), { message: /tools\/build-control-plane\.sh/ });

  // The build script and the TypeScript agree on the cache paths.
  const printed = spawnSync('bash', [join(REPO_ROOT, 'tools/build-control-plane.sh'), '--print-paths'], { env, encoding: 'utf8' });
  const b = controlPlaneBinaries(env);
  const commands = (['kubectl', ...NODE_COMMANDS] as const).map((c) => `${c}=${kubeCommandPath(c, env)}\n`).join('');
  t.equal(printed.stdout, `etcd=${b.etcd}\nkube-apiserver=${b.kubeApiserver}\n${commands}crictl=${crictlPath(env)}\n`);
  t.ok(kubeCommandPath('kubelet', env).startsWith(join(empty, 'bin', 'kubelet-v1.35.')), 'the node commands at the kube-apiserver version');
  t.throws(() => requireKubeCommand('kubelet', env), { message: /build-control-plane\.sh --node/ });
  t.ok(b.etcd.startsWith(join(empty, 'bin', 'etcd-v3.6.')), b.etcd);
  t.ok(b.kubeApiserver.startsWith(join(empty, 'bin', 'kube-apiserver-v1.35.')), b.kubeApiserver);

  const state = join(empty, 'state.json');
  const start = spawnSync(process.execPath, [join(REPO_ROOT, 'test/setup/start.ts')], {
    env: { ...env, RAYKEEPER_TEST_CONTROL_PLANE: state },
    encoding: 'utf8',
  });
  t.equal(start.status, 0, 'the before script does not abort the run');
  t.match(readState(state), { error: /not built.*tools\/build-control-plane\.sh/ }, 'tests that need Kubernetes will fail with this');
});

t.test('getControlPlane + testNamespace: a namespace of its own on the shared control plane', async (t) => {
  const ns = await testNamespace(t);
  t.match(ns.name, /^rk-getcontrolplane-testnamespace-a-[a-z-]*-[0-9a-f]{6}$/);
  t.ok(ns.name.length <= 63, 'a valid label');
  t.equal((await ns.kube.get({ ...NAMESPACES, name: ns.name })).status?.phase, 'Active');
  t.equal(ns.kubeConfig.getContextObject(ns.kubeConfig.getCurrentContext())?.namespace, ns.name, 'the KubeConfig defaults to it');
  const again = await getControlPlane();
  t.equal(again.info.server, ns.cp.info.server, 'one control plane per test process');
  await t.rejects(ns.kube.get(CONFIGMAPS.at(ns.name, 'none')), KubeApiError);
});
