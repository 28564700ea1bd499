// A sharded replica stops when asked even if the stop lands in the middle of a balancing round that
// follows a lost shard (on the real API server). The round then finds the shard without a term; a term
// started after the stop would campaign for ever, since its stop signal had already fired (the hang
// CI saw in shard-layout.test.ts). The round is held at its read of the single leader's Lease, the
// shard's Lease taken by another holder meanwhile, the stop issued, the round let go.
import t from 'tap';
import { pino } from 'pino';
import type { KubeClient } from '../../kube/client.ts';
import { LEASES } from '../../kube/resources.ts';
import { ShardCoordinator } from '../../kube/sharding.ts';
import { microTime } from '../../kube/leader.ts';
import { shardLeaseName } from '../../kube/shards.ts';
import { sleep } from '../../kube/backoff.ts';
import { testNamespace } from '../helpers/control-plane.ts';
import { until } from '../helpers/until.ts';

const LEASE = 'stopping';

t.test('a stop issued while a round follows a lost shard: run returns, no term campaigns after it', async (tt) => {
  const ns = await testNamespace(tt);
  let gate: Promise<void> | undefined;
  let held = false;
  // Holds the round's read of the single leader's Lease while `gate` is set: the round stays before its
  // term check until the test lets it go.
  const kube = new Proxy(ns.kube, {
    get(target, prop, receiver) {
      if (prop === 'getOrUndefined') {
        return async (ref: { name?: string }, options?: object) => {
          if (ref.name === LEASE && gate) {
            held = true;
            await gate;
          }
          return target.getOrUndefined(ref as Parameters<KubeClient['getOrUndefined']>[0], options);
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const log: string[] = [];
  const coordinator = new ShardCoordinator({
    kube,
    namespace: ns.name,
    name: LEASE,
    identity: 'a',
    shards: 2,
    logger: pino({ level: 'info' }, { write: (line: string) => void log.push(line) }),
    leaseDurationMs: 3_000,
    renewDeadlineMs: 2_000,
    retryPeriodMs: 400,
  });
  const stopped: number[] = [];
  const stop = new AbortController();
  tt.teardown(() => stop.abort());
  const run = coordinator.run(stop.signal, {
    onAcquired: () => undefined,
    onStopped: (shard) => void stopped.push(shard),
    drain: async () => undefined,
  });
  await until(() => coordinator.held().length === 2, 'a holds both shards', 30_000);

  let letGo = (): void => undefined;
  gate = new Promise<void>((resolve) => {
    letGo = resolve;
  });
  await until(() => held, 'a round held at its read of the single leader’s Lease', 10_000);
  const ref = { ...LEASES, namespace: ns.name, name: shardLeaseName(LEASE, 1) };
  const lease = await ns.kube.get(ref);
  const now = microTime(Date.now());
  await ns.kube.replace(ref, { ...lease, spec: { ...lease.spec, holderIdentity: 'intruder', leaseDurationSeconds: 300, renewTime: now } });
  await until(() => stopped.includes(1), 'a noticed shard 1 taken', 10_000);
  await sleep(100); // the lost term's own ending (release, finally) has run

  stop.abort();
  letGo();
  const outcome = await Promise.race([run.then(() => 'returned'), sleep(15_000).then(() => 'still running')]);
  tt.equal(outcome, 'returned', 'run returned after the stop');
  tt.same(coordinator.held(), [], 'nothing held after the stop');
  const campaigning = log.length;
  await sleep(1_500); // more than three retry periods: a term left running would campaign and log
  tt.equal(log.slice(campaigning).length, 0, 'no log line after run returned (no term left campaigning)');
  tt.equal((await ns.kube.get(ref)).spec?.holderIdentity, 'intruder', 'shard 1 still the intruder’s');
});
