// The controller's side of the Redis cleanup as an admin sees it, on the real API server with the test
// job runner running `raykeeper redis-cleanup` against a real redis-server: no user information of a
// Redis address in any Event or log line (the "run by hand" command included), an unusable
// ray.io/gcs-ft-deletion-timeout reported and replaced by the default, and the in-process cleanup of a
// terminating namespace (the cleanup API, no argv); the Job's --sweep from the deleted cluster's Ray version.
import t, { type Test } from 'tap';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { startController } from '../../controller/main.ts';
import { gcsFtCleanupModule } from '../../controller/gcsft-cleanup/module.ts';
import { GCS_FT_REDIS_CLEANUP_FINALIZER } from '../../src/names.ts';
import { redisServerMissing, startRedisServer } from '../helpers/redis-server.ts';
import { KubeClient } from '../../kube/client.ts';
import { createCluster, env, events, getCluster, jobRunner, rayCluster, rayKeys, seedRay, until, type Env } from '../helpers/harness.ts';
import { RAYCLUSTERS, type RayCluster } from '../../src/types.ts';
import { client } from '../redis/fixtures.ts';
import { JOBS, NAMESPACES } from '../../kube/resources.ts';

const SECRET = 'Adm1n-S3cret#9';

/** The controller in this process with its log lines captured (debug level: everything it says). */
async function controllerWithLog(tt: Test, e: Env, moduleFlags: Record<string, string> = {}): Promise<() => string> {
  let out = '';
  const sink = new Writable({
    write(chunk, _enc, done) {
      out += String(chunk);
      done();
    },
  });
  const c = await startController({
    kubeConfig: e.ns.kubeConfig,
    watchNamespace: e.ns.name,
    workers: 2,
    modules: [gcsFtCleanupModule],
    env: {},
    logger: pino({ level: 'debug' }, sink),
    moduleFlags: { 'cleanup-image': 'raykeeper:test', ...moduleFlags },
    retry: { baseMs: 100, maxMs: 2000, jitter: 0.2 },
  });
  tt.teardown(() => c.stop());
  return () => out;
}

async function released(e: Env, name: string): Promise<void> {
  await until(async () => {
    const c = await getCluster(e, name);
    return !c || !c.metadata.finalizers?.includes(GCS_FT_REDIS_CLEANUP_FINALIZER);
  }, `the finalizer of ${name} is released`);
}

/** The first line of the log holding `text`, once there is one. */
function logLine(log: () => string, text: string): Promise<string> {
  return until(
    () =>
      log()
        .split('\n')
        .find((l) => l.includes(text)),
    `a log line with ${JSON.stringify(text)}`,
  );
}

/**
 * Deletes the cluster's namespace, then the cluster, and waits for the release. Without
 * kube-controller-manager the namespace stays Terminating: no new object (Job) can be created.
 */
async function deleteInTerminatingNamespace(tt: Test, e: Env, name: string): Promise<void> {
  const admin = new KubeClient(e.ns.kubeConfig);
  tt.teardown(() => admin.close());
  await admin.delete({ ...NAMESPACES, name: e.ns.name });
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name });
  await released(e, name);
}

/** A test namespace, a redis-server with its client, the job runner and the controller (its log captured). */
async function stage(tt: Test, moduleFlags: Record<string, string> = {}) {
  const e = await env(tt);
  const server = await startRedisServer();
  tt.teardown(() => server.stop());
  const r = client(server.port);
  tt.teardown(() => r.disconnect());
  await jobRunner(tt, e);
  const log = await controllerWithLog(tt, e, moduleFlags);
  return { e, server, r, log };
}

const missing = redisServerMissing();
if (missing) {
  t.fail(missing); // a missing redis-server fails, like a missing control plane
} else {
  t.test('a password inside the Redis address appears in no Event and no log line', async (tt) => {
    const e = await env(tt);
    const server = await startRedisServer({ password: SECRET });
    tt.teardown(() => server.stop());
    const r = client(server.port, { password: SECRET });
    tt.teardown(() => r.disconnect());
    await jobRunner(tt, e);
    const log = await controllerWithLog(tt, e);

    // Succeeds: the password in the URL is right.
    const good = await createCluster(
      e,
      rayCluster('good', `redis://:${SECRET}@127.0.0.1:${server.port}`, { finalizers: [GCS_FT_REDIS_CLEANUP_FINALIZER] }),
    );
    await seedRay(r, good.metadata.uid!);
    // Fails: a wrong password in the URL (its Warning carries the "run by hand" command).
    await createCluster(
      e,
      rayCluster('bad', `redis://default:WRONG-${SECRET}@127.0.0.1:${server.port}`, { finalizers: [GCS_FT_REDIS_CLEANUP_FINALIZER] }),
    );
    for (const name of ['good', 'bad']) await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name });
    await released(e, 'good');
    await released(e, 'bad');
    tt.same(await rayKeys(r, good.metadata.uid!), [], 'the cleanup worked with the password from the URL');

    const created = await until(async () => {
      const ev = await events(e, 'CreatedRedisCleanupJob');
      return ev.length === 2 ? ev : undefined;
    }, 'two CreatedRedisCleanupJob events');
    const failed = await until(async () => (await events(e, 'RedisCleanupFailed'))[0], 'the RedisCleanupFailed event');
    await until(async () => (await events(e, 'RedisCleanupSucceeded'))[0], 'the RedisCleanupSucceeded event');
    for (const ev of created)
      tt.match(ev.message, new RegExp(`in Redis at redis://\\*\\*\\*@127\\.0\\.0\\.1:${server.port}$`), 'the address is shown, redacted');
    tt.match(
      failed.message,
      new RegExp(
        `RAY_REDIS_ADDRESS=redis://127\\.0\\.0\\.1:${server.port} REDIS_USERNAME='<user from the address>' REDIS_PASSWORD='<password from the address>' raykeeper redis-cleanup`,
      ),
      'the command asks for the credentials instead',
    );
    const all = await events(e);
    tt.ok(all.length >= 4, `${all.length} events written`);
    for (const ev of all) tt.notOk(ev.message.includes(SECRET), `${ev.reason}: no password`);
    tt.ok(log().includes('event CreatedRedisCleanupJob'), 'the log holds the events too');
    tt.notOk(log().includes(SECRET), 'no password in any log line');
  });

  t.test('ray.io/gcs-ft-deletion-timeout past int64: a Warning, the default, and the Job is created', async (tt) => {
    const { e, server, r } = await stage(tt);
    const cluster = await createCluster(
      e,
      rayCluster('huge', `127.0.0.1:${server.port}`, {
        finalizers: [GCS_FT_REDIS_CLEANUP_FINALIZER],
        annotations: { 'ray.io/gcs-ft-deletion-timeout': '99999999999999999999' },
      }),
    );
    await seedRay(r, cluster.metadata.uid!);
    await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'huge' });
    await released(e, 'huge');
    tt.same(await rayKeys(r, cluster.metadata.uid!), [], 'cleaned up');
    const job = await e.kube.get({
      ...JOBS,
      namespace: e.ns.name,
      name: 'huge-redis-cleanup',
    });
    tt.ok(
      job.spec!.activeDeadlineSeconds! <= 300 && job.spec!.activeDeadlineSeconds! > 0,
      `the Job's deadline comes from the 300 s default (${job.spec!.activeDeadlineSeconds})`,
    );
    const warning = await until(async () => (await events(e, 'InvalidGcsFtDeletionTimeout'))[0], 'the Warning event');
    tt.equal(warning.type, 'Warning');
    tt.match(
      warning.message,
      /ray\.io\/gcs-ft-deletion-timeout="99999999999999999999" is not a whole number of seconds in 1-604800; using 300/,
    );
  });

  /** A GCS-FT cluster with the given Ray version sources (the harness's head image is rayproject/ray:2.40.0). */
  const versioned = (name: string, address: string, rayVersion: string | undefined, image: string): RayCluster => {
    const body = rayCluster(name, address, { finalizers: [GCS_FT_REDIS_CLEANUP_FINALIZER] });
    if (rayVersion !== undefined) body.spec!.rayVersion = rayVersion;
    body.spec!.headGroupSpec!.template!.spec!.containers![0]!.image = image;
    return body;
  };
  /** Ray's tables plus one Ray never wrote up to RAY_RELEASE (only the sweep can find it). */
  const seedWithNewTable = async (r: ReturnType<typeof client>, ns: string): Promise<void> => {
    await seedRay(r, ns);
    await r.hset(`RAY${ns}@NEWTABLE`, 'f', 'v');
  };
  const jobArgs = async (e: Env, name: string): Promise<string[]> =>
    (
      await e.kube.get({
        ...JOBS,
        namespace: e.ns.name,
        name: `${name}-redis-cleanup`,
      })
    ).spec!.template!.spec!.containers![0]!.args!;

  t.test('the cleanup Job sweeps the keyspace only for a Ray newer than the known tables, or auto without one', async (tt) => {
    const { e, server, r, log } = await stage(tt);
    const address = `127.0.0.1:${server.port}`;
    const cases: Array<[string, string | undefined, string, 'never' | 'always', RegExp]> = [
      ['v240', '2.40.0', 'example.com/custom:7', 'never', /^Ray 2\.40\.0 \(spec\.rayVersion\) <= 2\.60\.0: tables known$/],
      ['img260', undefined, 'rayproject/ray:2.60.0', 'never', /^Ray 2\.60\.0 \(head image tag\) <= 2\.60\.0: tables known$/],
      ['v261', '2.61.0', 'rayproject/ray:2.40.0', 'always', /^Ray 2\.61\.0 \(spec\.rayVersion\) > 2\.60\.0: tables may be new/],
      [
        'nover',
        undefined,
        'rayproject/ray@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
        'always',
        /^a Ray image without a version/,
      ],
    ];
    const uids = new Map<string, string>();
    for (const [name, rayVersion, image] of cases) {
      const created = await createCluster(e, versioned(name, address, rayVersion, image));
      uids.set(name, created.metadata.uid!);
      await seedWithNewTable(r, created.metadata.uid!);
    }
    await seedWithNewTable(r, 'neighbour');
    for (const [name] of cases) await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name });
    for (const [name] of cases) await released(e, name);

    const created = await until(async () => {
      const ev = await events(e, 'CreatedRedisCleanupJob');
      return ev.length === cases.length ? ev : undefined;
    }, 'one CreatedRedisCleanupJob event per cluster');
    for (const [name, , , mode, reason] of cases) {
      const uid = uids.get(name)!;
      // Without a version, `auto`: the Job reads the one the head recorded (none here: it sweeps).
      const arg = name === 'nover' ? 'auto' : mode;
      tt.same((await jobArgs(e, name)).slice(-2), ['--sweep', arg], `${name}: the Job's args say --sweep ${arg}`);
      tt.same(
        await rayKeys(r, uid),
        mode === 'never' ? [`RAY${uid}@NEWTABLE`] : [],
        `${name}: ${mode === 'never' ? "Ray's tables gone, the unknown one left (no walk)" : 'everything gone, the unknown table too (walked)'}`,
      );
      const message = created.find((ev) => ev.involvedObject.name === name)?.message ?? '';
      tt.match(
        message,
        new RegExp(
          `^Created Redis cleanup Job ${e.ns.name}/${name}-redis-cleanup to delete storage namespace "${uid}" in Redis at 127\\.0\\.0\\.1:\\d+$`,
        ),
        `${name}: the Event says what, plainly`,
      );
      tt.notMatch(message, /--sweep|tables known|tables may be new|<=/, `${name}: no internal reasoning in the Event`);
      const line = log()
        .split('\n')
        .find((l) => l.includes('created the Redis cleanup Job') && l.includes(`"job":"${name}-redis-cleanup"`));
      tt.match(line && JSON.parse(line), { sweep: mode, sweepReason: reason }, `${name}: the log line carries the decision and why`);
    }
    tt.equal((await rayKeys(r, 'neighbour')).length, 6, "another cluster's keys, its unknown table included, intact");
  });

  t.test('--cleanup-sweep always: the admin makes every cleanup Job sweep', async (tt) => {
    const { e, server, r, log } = await stage(tt, { 'cleanup-sweep': 'always' });
    const created = await createCluster(e, versioned('forced', `127.0.0.1:${server.port}`, '2.40.0', 'rayproject/ray:2.40.0'));
    await seedWithNewTable(r, created.metadata.uid!);
    await seedWithNewTable(r, 'neighbour');
    await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'forced' });
    await released(e, 'forced');
    tt.same((await jobArgs(e, 'forced')).slice(-2), ['--sweep', 'always']);
    tt.same(await rayKeys(r, created.metadata.uid!), [], 'the unknown table is gone too');
    tt.equal((await rayKeys(r, 'neighbour')).length, 6, 'another cluster intact');
    await until(async () => (await events(e, 'CreatedRedisCleanupJob'))[0], 'the CreatedRedisCleanupJob event');
    const line = log()
      .split('\n')
      .find((l) => l.includes('created the Redis cleanup Job'));
    tt.match(line && JSON.parse(line), { sweep: 'always', sweepReason: 'forced by --cleanup-sweep always' });
  });

  t.test('namespace terminating: the controller cleans up through the cleanup API and releases', async (tt) => {
    const e = await env(tt);
    const server = await startRedisServer({ password: SECRET });
    tt.teardown(() => server.stop());
    const r = client(server.port, { password: SECRET });
    tt.teardown(() => r.disconnect());
    const log = await controllerWithLog(tt, e);
    const cluster = await createCluster(
      e,
      rayCluster('inproc', `redis://:${SECRET}@127.0.0.1:${server.port}`, { finalizers: [GCS_FT_REDIS_CLEANUP_FINALIZER] }),
    );
    const keys = await seedRay(r, cluster.metadata.uid!);
    await seedRay(r, 'another-cluster');
    tt.equal(keys.length, 5);
    await deleteInTerminatingNamespace(tt, e, 'inproc');
    tt.same(await rayKeys(r, cluster.metadata.uid!), [], "the cluster's data is gone");
    tt.equal((await rayKeys(r, 'another-cluster')).length, 5, 'another cluster intact');
    tt.same((await e.kube.list({ ...JOBS, namespace: e.ns.name })).items, [], 'no Job could be created');
    // The API server refuses Events in a terminating namespace too: the controller's log keeps it.
    const done = await logLine(log, 'event RedisCleanedByController');
    tt.match(
      (JSON.parse(done) as { msg: string }).msg,
      new RegExp(
        `deleted storage namespace "${cluster.metadata.uid}" in Redis at redis://\\*\\*\\*@127\\.0\\.0\\.1:\\d+\\. namespace "${cluster.metadata.uid}" on 127\\.0\\.0\\.1:\\d+ \\(standalone\\): deleted 5 key\\(s\\)`,
      ),
    );
    tt.notMatch((JSON.parse(done) as { msg: string }).msg, /sweep/, 'the Event is plain');
    const ended = log()
      .split('\n')
      .find((l) => l.includes('in-process Redis cleanup ended'));
    tt.match(
      ended && JSON.parse(ended),
      { ok: true, sweep: 'skipped', sweepReason: 'Ray 2.40.0 (head image tag) <= 2.60.0: tables known', scanCalls: 0 },
      'the in-process cleanup decides the sweep like the Job (in the log)',
    );
    tt.notOk(log().includes(SECRET), 'no password in any log line');
  });

  // The annotation over the operator's --cleanup-command-budget-ms; the operator's alone otherwise.
  for (const [name, annotation, flag, budgetMs] of [
    ['inproc-budget', '2', undefined, 2],
    ['inproc-op-budget', undefined, '3', 3],
  ] as const) {
    t.test(
      `namespace terminating: the in-process sweep keeps to the command budget (annotation ${annotation ?? 'none'}, --cleanup-command-budget-ms ${flag ?? 'unset'})`,
      async (tt) => {
        const e = await env(tt);
        const server = await startRedisServer();
        tt.teardown(() => server.stop());
        const r = client(server.port);
        tt.teardown(() => r.disconnect());
        const log = await controllerWithLog(tt, e, flag === undefined ? {} : { 'cleanup-command-budget-ms': flag });
        const spec = rayCluster(name, `127.0.0.1:${server.port}`, {
          finalizers: [GCS_FT_REDIS_CLEANUP_FINALIZER],
          annotations: annotation === undefined ? {} : { 'raykeeper.io/redis-cleanup-command-budget-ms': annotation },
        });
        spec.spec!.headGroupSpec!.template!.spec!.containers![0]!.image = 'rayproject/ray:latest'; // no version: the sweep runs
        const cluster = await createCluster(e, spec);
        await seedRay(r, cluster.metadata.uid!);
        await deleteInTerminatingNamespace(tt, e, name);
        tt.same(await rayKeys(r, cluster.metadata.uid!), [], "the cluster's data is gone");
        const ended = await logLine(log, 'in-process Redis cleanup ended');
        tt.match(
          JSON.parse(ended),
          { ok: true, sweep: 'ran', pace: { budgetMs, measure: 'commandstats' } },
          'the budget reached the sweep',
        );
      },
    );
  }
}
