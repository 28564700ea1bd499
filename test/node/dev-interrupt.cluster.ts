// `raykeeper dev --kubelet` as a user runs it: it prints kubeconfig, redis and `node: localhost Ready`;
// Ctrl-C (SIGINT to its whole process group, as a terminal sends it) stops everything and leaves the
// host as it was. One killed with SIGKILL leaves its bridge, mounts and pod network namespaces; the next
// start removes them and starts. Needs root (`npm run test:cluster`).
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { NODE_NETWORK } from '../../localcluster/node/config.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { assertHostRestored, hostState } from './helpers.ts';

interface DevKubelet {
  child: ChildProcess;
  ready: boolean;
  exited: Promise<number | null>;
  stdout(): string;
  stderr(): string;
}

/** Starts `raykeeper dev --kubelet` in a process group of its own and waits for its ready lines. */
async function startDevKubelet(t: Test, stateDir: string): Promise<DevKubelet> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k !== 'NODE_OPTIONS' && !k.startsWith('_TAPJS_') && k !== 'NODE_V8_COVERAGE'),
  );
  const child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'raykeeper.js'), 'dev', '--kubelet', '--state-dir', stateDir], {
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
  });
  const ready = await new Promise<boolean>((resolve) => {
    child.stdout!.on('data', (d: string) => {
      stdout += d;
      if (stdout.includes('Ctrl-C stops everything')) resolve(true);
    });
    void exited.then(() => resolve(false));
  });
  return { child, ready, exited, stdout: () => stdout, stderr: () => stderr };
}

t.test('dev --kubelet: ready lines, then Ctrl-C leaves nothing behind', async (t) => {
  const before = await hostState();
  const dev = await startDevKubelet(t, t.testdir());
  const { child, exited } = dev;
  const stdout = dev.stdout();
  t.ok(dev.ready, 'dev --kubelet became ready', { stderr: dev.stderr().slice(-3000) });
  t.match(stdout, /^kubeconfig: \S+$/m);
  t.match(stdout, /^redis: 10\.0\.0\.\d+:6379$/m, 'the in-cluster Redis by its ClusterIP');
  t.match(stdout, /^node: localhost Ready$/m);

  process.kill(-child.pid!, 'SIGINT');
  t.equal(await exited, 0, 'exits 0 after stopping');
  t.match(dev.stderr(), /stopped\n$/);
  t.notMatch(dev.stderr(), /clean-up left/, 'every clean-up step succeeded');
  await assertHostRestored(t, before);
});

t.test('a dev --kubelet killed with SIGKILL: the next start removes what it left, and starts', async (t) => {
  const before = await hostState();
  const killed = await startDevKubelet(t, join(t.testdir(), 'killed'));
  t.ok(killed.ready, 'the first dev --kubelet became ready', { stderr: killed.stderr().slice(-3000) });
  process.kill(-killed.child.pid!, 'SIGKILL');
  await killed.exited;
  t.ok(existsSync(`/sys/class/net/${NODE_NETWORK.bridge}`), 'the killed node left its bridge');

  const next = await startDevKubelet(t, join(t.testdir(), 'next'));
  t.ok(next.ready, 'the next dev --kubelet became ready', { stderr: next.stderr().slice(-3000) });
  t.match(next.stderr(), /left by a node that was killed, removed: .*bridge raykeeper0/, 'it says what it removed');
  process.kill(-next.child.pid!, 'SIGINT');
  t.equal(await next.exited, 0, 'exits 0 after stopping');
  // Sysctls and iptables rules the killed node's kubelet changed are not known to the next one: only
  // what the sweep promises is asserted (processes, mounts, bridge, veths, network namespaces).
  const after = await hostState();
  t.same(after.processes, [], 'no node process is left');
  t.same(after.links, before.links, 'bridge and veths');
  t.same(after.netns, before.netns, 'network namespaces');
  t.same(
    after.mounts.filter((m) => m.includes('raykeeper-node') && !before.mounts.includes(m)),
    [],
    'no mount under a node state directory',
  );
});
