// exitedOnStartTimeout (localcluster/ray.ts): the real-Ray tests retry a `ray start` only when it ended
// with Ray's own start-up timeout. Stand-in processes print what `ray start` would and exit.
import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
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
  const { proc, log } = await exited(`echo starting; echo "RuntimeError: ${RAY_START_TIMED_OUT}, because some of the raylet failed to startup" >&2; exit 1`);
  t.equal(await exitedOnStartTimeout(proc, log), true);
});

t.test('any other exit: not retried', async (t) => {
  const { proc, log } = await exited('echo "ValueError: bad --port" >&2; exit 1');
  t.equal(await exitedOnStartTimeout(proc, log), false);
  t.match(log(), /bad --port/, 'the control: its output was read');
});

t.test('a child that still holds the pipes is stopped, not waited for', async (t) => {
  const { proc, log } = await exited(`(sleep 60) & echo "${RAY_START_TIMED_OUT}" >&2; exit 1`);
  const started = Date.now();
  t.equal(await exitedOnStartTimeout(proc, log), true);
  t.ok(Date.now() - started < 20_000, 'the process group was killed, closing the pipes');
});
