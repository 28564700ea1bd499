// keepRunning (localcluster/restarting.ts): a component that exits on its own is started again, at most
// `limit` times, and never after stop(). Real child processes; a counter file says how often one started.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { sleep } from '../../kube/backoff.ts';
import { isAlive, spawnSupervised } from '../../localcluster/process.ts';
import { type Exit, keepRunning } from '../../localcluster/restarting.ts';
import { until } from '../helpers/until.ts';

/**
 * A start function whose process counts its starts and exits 3 on each of the first `failures` (after
 * `runFor` seconds), then stays up.
 */
async function flaky(t: Test, failures: number, runFor = 0) {
  const dir = await mkdtemp(join(tmpdir(), 'raykeeper-restarting-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const counter = join(dir, 'starts');
  const script = `n=$(( $(cat ${counter} 2>/dev/null || echo 0) + 1 )); echo $n > ${counter}; [ $n -le ${failures} ] && sleep ${runFor} && exit 3; exec sleep 600`;
  const start = () => spawnSupervised('/bin/sh', ['-c', script], { group: true });
  const starts = async () => Number((await readFile(counter, 'utf8').catch(() => '0')).trim());
  return { start, starts };
}

t.test('exits twice, then stays up: started again twice and running', async (t) => {
  const { start, starts } = await flaky(t, 2);
  const told: Array<[Exit, number]> = [];
  const proc = keepRunning(await start(), { start, limit: 3, pauseMs: 50, onRestart: (exit, n) => told.push([exit, n]) });
  t.teardown(() => proc.stop());
  await until(async () => (await starts()) === 3 && proc.restarts() === 2, 'the third start');
  await until(async () => isAlive(proc.current().pid), 'the third start running');
  t.same(
    told.map(([exit, n]) => [exit.code, n]),
    [
      [3, 1],
      [3, 2],
    ],
    'each restart told with the exit that caused it',
  );
  let down = false;
  void proc.exited.then(() => (down = true));
  await sleep(300);
  t.equal(down, false, 'not down while its latest start runs');
  await proc.stop(2000);
  t.equal(isAlive(proc.current().pid), false, 'stop ends the latest start');
  t.equal(down, true, 'exited resolves on stop');
  t.equal(await starts(), 3, 'no start after stop');
});

t.test('exits every time: started 1 + limit times, then down with the last exit', async (t) => {
  const { start, starts } = await flaky(t, 100);
  const proc = keepRunning(await start(), { start, limit: 2, pauseMs: 50 });
  const exit = await proc.exited;
  t.equal(exit.code, 3, 'the last exit');
  t.equal(await starts(), 3);
  t.equal(proc.restarts(), 2);
});

t.test('stopped during the pause before a restart: never started again', async (t) => {
  const { start, starts } = await flaky(t, 100);
  const proc = keepRunning(await start(), { start, limit: 5, pauseMs: 1000 });
  await until(async () => proc.restarts() === 1, 'the first exit');
  await proc.stop();
  await sleep(1300);
  t.equal(await starts(), 1, 'started once only');
});

t.test('a start that ran long enough ends the row: exits far apart never exhaust the limit', async (t) => {
  const { start, starts } = await flaky(t, 3, 0.4);
  const proc = keepRunning(await start(), { start, limit: 1, pauseMs: 50, stableAfterMs: 200 });
  t.teardown(() => proc.stop());
  await until(async () => (await starts()) === 4 && isAlive(proc.current().pid), 'the fourth start running');
  t.equal(proc.restarts(), 3, 'three restarts with a limit of one in a row');
});
