// `raykeeper dev --kubelet` as a user runs it: it prints kubeconfig, redis and `node: localhost Ready`;
// Ctrl-C (SIGINT to its whole process group, as a terminal sends it) stops everything and leaves the
// host as it was. Needs root (`npm run test:cluster`).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { assertHostRestored, hostState } from './helpers.ts';

t.test('dev --kubelet: ready lines, then Ctrl-C leaves nothing behind', async (t) => {
  const before = await hostState();
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k !== 'NODE_OPTIONS' && !k.startsWith('_TAPJS_') && k !== 'NODE_V8_COVERAGE'),
  );
  const child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'raykeeper.js'), 'dev', '--kubelet', '--state-dir', t.testdir()], {
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  t.teardown(() => {
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
  });
  const ready = await new Promise<boolean>((resolve) => {
    child.stdout.on('data', (d: string) => {
      stdout += d;
      if (stdout.includes('Ctrl-C stops everything')) resolve(true);
    });
    void exited.then(() => resolve(false));
  });
  t.ok(ready, 'dev --kubelet became ready', { stderr: stderr.slice(-3000) });
  t.match(stdout, /^kubeconfig: \S+$/m);
  t.match(stdout, /^redis: 10\.0\.0\.\d+:6379$/m, 'the in-cluster Redis by its ClusterIP');
  t.match(stdout, /^node: localhost Ready$/m);

  process.kill(-child.pid!, 'SIGINT');
  t.equal(await exited, 0, 'exits 0 after stopping');
  t.match(stderr, /stopped\n$/);
  t.notMatch(stderr, /clean-up left/, 'every clean-up step succeeded');
  await assertHostRestored(t, before);
});
