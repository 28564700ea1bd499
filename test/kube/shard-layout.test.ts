// Two layouts of Leases never hold work at once, in process on the real API server (issue 29): a
// replica of another --shards takes no shard while the incumbent layout's replica lives, a single
// leader (--shards 1) does not lead while a sharded replica lives, and a sharded replica takes no shard
// while the single leader leads. Each overlap is polled every 50 ms for over two lease durations after
// the newcomer's join wait: at no poll do both hold work; once the incumbent stops, the newcomer takes over.
import t, { type Test } from 'tap';
import { pino } from 'pino';
import { startController, type RunningController } from '../../controller/main.ts';
import { LEASES } from '../../kube/resources.ts';
import { memberLeaseName, SHARDS_ANNOTATION } from '../../kube/shards.ts';
import { createMetricsRegistry, type Registry } from '../../kube/metrics.ts';
import { sleep } from '../../kube/backoff.ts';
import { testNamespace } from '../helpers/control-plane.ts';
import { until } from '../helpers/harness.ts';

const LEASE = 'layout';
const TIMING = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 400 } as const;
/** Longer than the join wait (1.8 s) plus two lease durations: a newcomer would have taken a shard by then. */
const OVERLAP_MS = 8_000;

interface Replica {
  c: RunningController;
  metrics: Registry;
  /** Its log lines (JSON), info and above. */
  log: string[];
  stopped: boolean;
  stop(): Promise<void>;
}

async function replica(tt: Test, ns: Awaited<ReturnType<typeof testNamespace>>, identity: string, shards: number): Promise<Replica> {
  const log: string[] = [];
  const metrics = createMetricsRegistry();
  const c = await startController({
    kubeConfig: ns.kubeConfig,
    watchNamespace: ns.name,
    modules: [],
    logger: pino({ level: 'info' }, { write: (line: string) => void log.push(line) }),
    metrics,
    leaderElect: true,
    leaseNamespace: ns.name,
    leaseName: LEASE,
    identity,
    shards,
    ...TIMING,
  });
  const r: Replica = {
    c,
    metrics,
    log,
    stopped: false,
    stop: async () => {
      if (r.stopped) return;
      r.stopped = true;
      await c.stop();
    },
  };
  tt.teardown(() => r.stop());
  return r;
}

/** What a replica holds now: its shards, or 'leader' (the single leader leading). */
function holding(r: Replica): string {
  if (r.stopped) return '';
  const sharding = r.c.manager.sharding;
  if (sharding) return sharding.held().join(',');
  return r.c.manager.isLeader() ? 'leader' : '';
}

async function gauge(r: Replica, name: string): Promise<number | undefined> {
  return (await r.metrics.getSingleMetric(name)?.get())?.values[0]?.value;
}

/**
 * Polls every 50 ms for `ms`: the incumbent keeps `expected` and the newcomer holds nothing. Returns
 * how many polls were made; the first violation fails the test.
 */
async function overlap(tt: Test, incumbent: Replica, newcomer: Replica, expected: string, ms: number): Promise<number> {
  const end = Date.now() + ms;
  let polls = 0;
  while (Date.now() < end) {
    const [i, n] = [holding(incumbent), holding(newcomer)];
    polls += 1;
    if (n !== '' || i !== expected) {
      tt.fail(`poll ${polls}: the incumbent holds "${i}" (expected "${expected}"), the newcomer "${n}"`);
      return polls;
    }
    await sleep(50);
  }
  return polls;
}

/** Polls every 50 ms until `done`: never do both hold work. */
async function handover(tt: Test, a: Replica, b: Replica, done: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 60_000;
  while (!done()) {
    const [x, y] = [holding(a), holding(b)];
    if (x !== '' && y !== '') tt.fail(`both hold work during the handover: "${x}" and "${y}"`);
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
  tt.pass(what);
}

const blockedLines = (r: Replica) => r.log.filter((l) => l.includes('another layout is running'));

t.test('--shards 3 beside a live --shards 2: takes no shard until the --shards 2 replica stops', async (tt) => {
  const ns = await testNamespace(tt);
  const a = await replica(tt, ns, 'a', 2);
  await until(() => a.c.manager.sharding!.held().length === 2, 'a (--shards 2) holds both shards', 30_000);
  const member = await ns.kube.get({
    ...LEASES,
    namespace: ns.name,
    name: memberLeaseName(LEASE, 'a'),
  });
  tt.equal(member.metadata.annotations?.[SHARDS_ANNOTATION], '2', 'the member Lease records N');

  const b = await replica(tt, ns, 'b', 3);
  const polls = await overlap(tt, a, b, '0,1', OVERLAP_MS);
  tt.pass(`${polls} polls over ${OVERLAP_MS} ms: a kept shards 0 and 1, b held none`);
  tt.same(b.c.manager.sharding!.layoutBlocker(), { kind: 'member', identity: 'a', shards: 2 }, 'b sees what blocks it');
  tt.equal(a.c.manager.sharding!.layoutBlocker(), undefined, 'a, the incumbent, is not blocked');
  tt.equal(await gauge(b, 'raykeeper_shard_layout_blocked'), 1, 'b: raykeeper_shard_layout_blocked 1');
  tt.equal(await gauge(a, 'raykeeper_shard_layout_blocked'), 0, 'a: 0');
  const lines = blockedLines(b);
  tt.equal(lines.length, 1, 'logged once');
  tt.match(JSON.parse(lines[0]!), { level: 50, other: 'a', otherShards: 2, shards: 3 }, 'at error level, naming a and its N');
  const shard2 = await ns.kube.getOrUndefined({
    ...LEASES,
    namespace: ns.name,
    name: `${LEASE}-shard-2`,
  });
  tt.notOk(shard2?.spec?.holderIdentity, 'shard 2 (of --shards 3) not taken meanwhile');

  await a.stop();
  await handover(tt, a, b, () => b.c.manager.sharding!.held().length === 3, 'a stopped: b holds all 3 shards');
  tt.equal(b.c.manager.sharding!.layoutBlocker(), undefined, 'b no longer blocked');
  tt.equal(await gauge(b, 'raykeeper_shard_layout_blocked'), 0, 'b: raykeeper_shard_layout_blocked 0');
});

t.test('a single leader beside a live --shards 2 replica: does not lead until it stops', async (tt) => {
  const ns = await testNamespace(tt);
  const s = await replica(tt, ns, 's', 2);
  await until(() => s.c.manager.sharding!.held().length === 2, 's (--shards 2) holds both shards', 30_000);
  const l = await replica(tt, ns, 'l', 1);
  const polls = await overlap(tt, s, l, '0,1', OVERLAP_MS);
  tt.pass(`${polls} polls over ${OVERLAP_MS} ms: s kept its shards, l did not lead`);
  tt.same(l.c.manager.layoutWatch!.blockedBy(), { identity: 's', shards: 2 }, 'l sees the live member');
  tt.equal(await gauge(l, 'raykeeper_shard_layout_blocked'), 1, 'l: raykeeper_shard_layout_blocked 1');
  const lines = blockedLines(l);
  tt.equal(lines.length, 1, 'logged once');
  tt.match(JSON.parse(lines[0]!), { level: 50, other: 's', otherShards: 2 }, 'at error level, naming s and its N');
  tt.notOk(
    (await ns.kube.getOrUndefined({ ...LEASES, namespace: ns.name, name: LEASE }))?.spec?.holderIdentity,
    'the single leader’s Lease not taken',
  );

  await s.stop();
  await handover(tt, s, l, () => l.c.manager.isLeader(), 's stopped: l leads');
  tt.equal(await gauge(l, 'raykeeper_shard_layout_blocked'), 0, 'l: raykeeper_shard_layout_blocked 0');
});

t.test('a --shards 2 replica beside a leading single leader: takes no shard until it stops', async (tt) => {
  const ns = await testNamespace(tt);
  const l = await replica(tt, ns, 'l', 1);
  await until(() => l.c.manager.isLeader(), 'l leads', 30_000);
  const s = await replica(tt, ns, 's', 2);
  const polls = await overlap(tt, l, s, 'leader', OVERLAP_MS);
  tt.pass(`${polls} polls over ${OVERLAP_MS} ms: l kept leading, s held no shard`);
  tt.same(s.c.manager.sharding!.layoutBlocker(), { kind: 'leader', identity: 'l' }, 's sees the single leader');
  tt.equal(await gauge(s, 'raykeeper_shard_layout_blocked'), 1, 's: raykeeper_shard_layout_blocked 1');
  const lines = blockedLines(s);
  tt.equal(lines.length, 1, 'logged once');
  tt.match(JSON.parse(lines[0]!), { level: 50, other: 'l', otherShards: 1, shards: 2 }, 'at error level, naming l');

  await l.stop(); // releases its Lease: no holder, so s need not wait a lease duration
  await handover(tt, l, s, () => s.c.manager.sharding!.held().length === 2, 'l stopped: s holds both shards');
});
