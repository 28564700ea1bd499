// exitedOnStartTimeout (localcluster/ray.ts): the real-Ray tests retry a `ray start` only when it ended
// with Ray's own start-up timeout. Stand-in processes print what `ray start` would and exit.
import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { isAlive } from '../../localcluster/process.ts';
import { exitedOnStartTimeout, RAY_START_TIMED_OUT } from '../../localcluster/ray.ts';

async function exited(script: string) {
  const proc = spawn('sh', ['-c', script], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  await once(proc, 'exit');
  return { proc, log: () => out };
}

t.test("Ray's start-up timeout, on stderr among other lines: retried", async (t) => {
  const { proc, log } = await exited(
    `echo starting; echo "RuntimeError: ${RAY_START_TIMED_OUT}, because some of the raylet failed to startup" >&2; exit 1`,
  );
  t.equal(await exitedOnStartTimeout(proc, log), true);
});

t.test('any other exit: not retried', async (t) => {
  const { proc, log } = await exited('echo "ValueError: bad --port" >&2; exit 1');
  t.equal(await exitedOnStartTimeout(proc, log), false);
  t.match(log(), /bad --port/, 'the control: its output was read');
});

t.test('a child that still holds the pipes is stopped, not waited for', async (t) => {
  // The child prints its pid and would hold both pipes open for a minute.
  const { proc, log } = await exited(
    `(echo "child $(exec sh -c 'echo $PPID')"; sleep 60) & sleep 0.2; echo "${RAY_START_TIMED_OUT}" >&2; exit 1`,
  );
  const child = Number(/child (\d+)/.exec(log())?.[1]);
  t.ok(child > 0 && isAlive(child), 'the control: the child runs when the start has exited');
  t.equal(await exitedOnStartTimeout(proc, log), true);
  t.notOk(isAlive(child), 'the child was killed with the process group');
  t.ok(proc.stdout!.closed && proc.stderr!.closed, 'and the pipes are closed');
});
