// The orphan finder (controller/gcsft-orphans/) on the real API server and a real redis-server whose
// password reaches the controller only through a Secret: namespaces that live RayClusters name (a
// deleting one too) are never reported or collected, an orphan is reported once (one Event on the
// leader Lease, gauge 1, a log line saying why), and --orphan-gc-after deletes exactly the orphan once
// the grace has passed (a fake clock), never while a RayCluster names it. No password anywhere. Embedded
// GCS storage claims kept by deletionPolicy Retain after their RayCluster went are reported too.
import t, { type Test } from 'tap';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { startController, type RunningController } from '../../controller/main.ts';
import { createOrphanFinder, type OrphanFinder, type OrphanFinderConfig } from '../../controller/gcsft-orphans/finder.ts';
import { runCleanup } from '../../controller/redis-cleanup/cleanup.ts';
import { rayClusterInformer } from '../../controller/raycluster/informers.ts';
import { MODULE } from '../../controller/module-names.ts';
import { gcsOrphansModule } from '../../controller/gcsft-orphans/module.ts';
import type { ReconcilerModule } from '../../kube/reconciler.ts';
import { RAYCLUSTERS } from '../../src/types.ts';
import { PERSISTENTVOLUMECLAIMS, SECRETS } from '../../kube/resources.ts';
import { JSON_PATCH } from '../../kube/client.ts';
import { redisServerMissing } from '../helpers/redis-server.ts';
import { kubeconfigFile, testNamespace } from '../helpers/control-plane.ts';
import { runWith } from '../../controller/redis-cleanup/cli.ts';
import { FakeClock } from '../helpers/fake-clock.ts';
import { sleep } from '../../kube/backoff.ts';
import {
  createCluster,
  env,
  events,
  getCluster,
  metricsOf,
  metricValue,
  rayCluster,
  rayKeys,
  redis,
  seedRay,
  quiet,
  until,
  type Env,
} from '../helpers/harness.ts';

const SECRET = 'Orph4n-S3cret#7';
const HOUR = 3_600_000;
const FROM_SECRET = [{ name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'redis-auth', key: 'password' } } }];

/** A password-protected redis-server and the Secret the clusters' heads read its password from. */
async function passwordRedis(tt: Test, e: Env) {
  const made = await redis(tt, { password: SECRET });
  await e.kube.create(
    { ...SECRETS, namespace: e.ns.name },
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'redis-auth' }, stringData: { password: SECRET } },
  );
  return made;
}

/** The controller as `raykeeper controller` runs it, with only the orphan finder (scans every hour). */
async function startOrphanController(tt: Test, e: Env): Promise<RunningController> {
  const c = await startController({
    kubeConfig: e.ns.kubeConfig,
    watchNamespace: e.ns.name,
    modules: [gcsOrphansModule],
    moduleFlags: { 'orphan-scan-interval': '1h' },
    env: {},
    leaderElect: true,
    leaseNamespace: e.ns.name,
    healthPort: 0,
    healthHost: '127.0.0.1',
    logger: quiet,
  });
  tt.teardown(() => c.stop());
  return c;
}

/** The controller (leader of its own Lease) with the finder built on a fake clock; scans only when the test says. */
async function stage(tt: Test, options: { cleanup?: OrphanFinderConfig['cleanup'] } = {}) {
  const e = await env(tt);
  const { server, client: r } = await passwordRedis(tt, e);
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  let finder: OrphanFinder | undefined;
  const module: ReconcilerModule = {
    name: MODULE.gcsOrphans,
    summary: 'the orphan finder under test',
    create(ctx) {
      const made = createOrphanFinder(ctx, { intervalMs: 0, gcAfterMs: HOUR, now: clock.now, ...options });
      finder = made.finder;
      return made.registration;
    },
  };
  let out = '';
  const sink = new Writable({
    write(chunk, _enc, done) {
      out += String(chunk);
      done();
    },
  });
  const c: RunningController = await startController({
    kubeConfig: e.ns.kubeConfig,
    watchNamespace: e.ns.name,
    modules: [module],
    env: {},
    leaderElect: true,
    leaseNamespace: e.ns.name,
    leaseName: 'raykeeper-controller',
    healthPort: 0,
    healthHost: '127.0.0.1',
    logger: pino({ level: 'debug' }, sink),
  });
  tt.teardown(() => c.stop());
  await until(() => c.manager.isLeader(), 'the controller leads');
  const informer = rayClusterInformer(c.manager.ctx);
  /** Waits until the finder's cache holds exactly these clusters of the test namespace. */
  const cached = (names: string[]) =>
    until(
      () =>
        informer
          .list()
          .map((x) => x.metadata.name)
          .sort()
          .join() === [...names].sort().join(),
      `the cache holds ${names.join(', ') || 'no cluster'}`,
    );
  const scan = async () => {
    const report = await finder!.scan();
    await c.manager.ctx.events.flush();
    return report;
  };
  const gauge = async () =>
    metricValue(await metricsOf(c.port!), 'raykeeper_gcs_orphaned_namespaces', `redis="redis://127.0.0.1:${server.port}"`);
  return { e, server, r, clock, c, cached, scan, gauge, log: () => out };
}

async function deleteCluster(e: Env, name: string): Promise<void> {
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name });
}

const missing = redisServerMissing();
if (missing) {
  t.fail(missing);
} else {
  t.test(
    'owned namespaces are never reported; an orphan is reported once and collected only after the grace, never while named',
    async (tt) => {
      const { e, server, r, clock, c, cached, scan, gauge, log } = await stage(tt);
      const address = `127.0.0.1:${server.port}`;
      // 'explicit' sorts first and has no password: the finder falls back to the next cluster's credentials.
      await createCluster(e, rayCluster('explicit', address, { annotations: { 'ray.io/external-storage-namespace': 'team-ns' } }));
      const live = await createCluster(e, rayCluster('live', address, { headEnv: FROM_SECRET }));
      const uid = live.metadata.uid!;
      const owned = [...(await seedRay(r, uid)), ...(await seedRay(r, 'team-ns'))].sort();
      await seedRay(r, 'team-ns1'); // the orphan: its name extends an owned one
      await r.set('app:config', 'not Ray');
      await cached(['explicit', 'live']);

      const first = await scan();
      tt.same(first.failed, [], 'the Redis was listed');
      tt.same(
        first.orphans.map((o) => o.namespace),
        ['team-ns1'],
        'only the namespace no RayCluster names',
      );
      tt.same(
        first.newlyFound.map((o) => o.namespace),
        ['team-ns1'],
      );
      tt.equal(await gauge(), 1, 'gauge: one orphan, labelled with the address');
      let found = await events(e, 'OrphanedGcsNamespace');
      tt.equal(found.length, 1, 'one Event');
      tt.equal(found[0]?.involvedObject.kind, 'Lease', 'on the leader Lease');
      tt.match(found[0]?.message, `Storage namespace "team-ns1" in Redis at redis://${address} is orphaned: no live RayCluster names it`);
      tt.match(
        log(),
        /"namespace":"team-ns1".*"why":"no live RayCluster names it".*orphaned GCS storage namespace found/,
        'a log line says which and why',
      );

      clock.advance(HOUR / 2);
      const second = await scan();
      tt.same(second.newlyFound, [], 'not new the second time');
      found = await events(e, 'OrphanedGcsNamespace');
      tt.same(
        found.map((x) => x.count ?? 1),
        [1],
        'still one Event, not repeated',
      );
      tt.same(second.deleted, [], 'within the grace: nothing deleted');
      tt.equal((await rayKeys(r, 'team-ns1')).length, 5, 'the orphan is still there');

      // A RayCluster names it before the grace ends: never collected while it does.
      await createCluster(e, rayCluster('adopter', address, { annotations: { 'ray.io/external-storage-namespace': 'team-ns1' } }));
      clock.advance(HOUR);
      const named = await scan();
      tt.same(named.deleted, [], 'named again: not deleted');
      tt.equal((await rayKeys(r, 'team-ns1')).length, 5, 'its keys stay');
      await cached(['adopter', 'explicit', 'live']);
      const adopted = await scan();
      tt.same(adopted.orphans, [], 'no orphan while a cluster names it');
      tt.equal(await gauge(), 0, 'gauge back to 0');

      // Orphaned again: the grace starts over.
      await deleteCluster(e, 'adopter');
      await cached(['explicit', 'live']);
      const again = await scan();
      tt.same(
        again.newlyFound.map((o) => o.namespace),
        ['team-ns1'],
        'found again',
      );
      clock.advance(HOUR - 1);
      tt.same((await scan()).deleted, [], 'one millisecond before the grace: nothing');
      clock.advance(1);
      const collected = await scan();
      tt.same(
        collected.deleted.map((o) => o.namespace),
        ['team-ns1'],
        'deleted after the grace',
      );
      tt.same(await rayKeys(r, 'team-ns1'), [], "the orphan's keys are gone");
      tt.same([...(await rayKeys(r, uid)), ...(await rayKeys(r, 'team-ns'))].sort(), owned, 'every owned key is still there');
      tt.equal(await r.get('app:config'), 'not Ray', 'a foreign key is untouched');
      tt.equal(await gauge(), 0, 'gauge 0 after the deletion');
      tt.equal((await events(e, 'DeletedOrphanedGcsNamespace')).length, 1, 'one Event for the deletion');
      const dry = log().indexOf('orphan GC dry run');
      tt.ok(dry >= 0 && dry < log().indexOf('orphan GC: namespace'), 'a dry run is logged before the deletion');
      tt.same((await scan()).orphans, [], 'nothing left to report');

      for (const ev of await events(e)) tt.notOk(ev.message.includes(SECRET), `${ev.reason}: no password`);
      tt.notOk(log().includes(SECRET), 'no password in any log line');
      tt.notOk((await metricsOf(c.port!)).includes(SECRET), 'no password in the metrics');
    },
  );

  t.test("a RayCluster created during the dry run with the orphan's namespace stops the deletion (re-checked before it)", async (tt) => {
    const calls: string[] = [];
    let onDryRun: () => Promise<void> = async () => {};
    const { e, server, r, clock, cached, scan } = await stage(tt, {
      cleanup: async (o) => {
        calls.push(o.dryRun ? 'dry' : 'delete');
        if (o.dryRun) await onDryRun();
        return runCleanup(o);
      },
    });
    await createCluster(e, rayCluster('live', `127.0.0.1:${server.port}`, { headEnv: FROM_SECRET }));
    await cached(['live']);
    const keys = await seedRay(r, 'racing');
    tt.same(
      (await scan()).orphans.map((o) => o.namespace),
      ['racing'],
      'an orphan at first',
    );
    clock.advance(2 * HOUR);
    onDryRun = async () => {
      await createCluster(
        e,
        rayCluster('newcomer', `127.0.0.1:${server.port}`, {
          headEnv: FROM_SECRET,
          annotations: { 'ray.io/external-storage-namespace': 'racing' },
        }),
      );
    };
    const report = await scan();
    tt.same(calls, ['dry'], 'the dry run only: no deletion');
    tt.match(report.kept, [{ orphan: { namespace: 'racing' }, reason: /newcomer names it/ }], 'kept, and why');
    tt.same(await rayKeys(r, 'racing'), keys.sort(), 'its keys stay');
  });

  t.test(
    'retained GCS storage claims (embedded storage, Retain) whose RayCluster is gone: reported once (log, Event, gauge); live and owned ones never',
    async (tt) => {
      const { e, server, c, scan, log } = await stage(tt);
      const claim = (name: string, cluster: string, owned = false) => ({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: {
          name,
          labels: { 'ray.io/cluster': cluster },
          ...(owned
            ? {
                ownerReferences: [
                  { apiVersion: 'ray.io/v1', kind: 'RayCluster', name: cluster, uid: '7e1d7a4c-0000-4000-8000-000000000001' },
                ],
              }
            : {}),
        },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      });
      await createCluster(e, rayCluster('alive', `127.0.0.1:${server.port}`));
      for (const body of [
        claim('alive-gcs-pvc', 'alive'),
        claim('gone-gcs-pvc', 'gone'),
        claim('owned-gcs-pvc', 'owned', true),
        claim('data', 'gone'),
      ])
        await e.kube.create({ ...PERSISTENTVOLUMECLAIMS, namespace: e.ns.name }, body);
      // Another namespace's retained-looking claim: the finder runs under --watch-namespace, so never listed.
      const other = await testNamespace(tt);
      await e.kube.create({ ...PERSISTENTVOLUMECLAIMS, namespace: other.name }, claim('elsewhere-gcs-pvc', 'elsewhere'));
      const mine = (r: { retainedClaims?: Array<{ namespace: string; name: string }> }) => {
        tt.same(
          r.retainedClaims?.filter((x) => x.namespace !== e.ns.name),
          [],
          'under --watch-namespace, only that namespace',
        );
        return r.retainedClaims?.map((x) => x.name);
      };
      const gauge = async () => metricValue(await metricsOf(c.port!), 'raykeeper_gcs_retained_claims', `namespace="${e.ns.name}"`);

      tt.same(mine(await scan()), ['gone-gcs-pvc'], 'only the unowned claim of a cluster that is gone');
      tt.equal(await gauge(), 1, 'gauge');
      tt.match(log(), /"claim":"gone-gcs-pvc","cluster":"gone".*retained GCS storage claim found/, 'a log line');
      tt.same(mine(await scan()), ['gone-gcs-pvc'], 'still retained');
      const found = (await events(e, 'RetainedGcsStorageClaim')).filter((x) => x.message.includes(`${e.ns.name}/gone-gcs-pvc`));
      tt.same(
        found.map((x) => [x.involvedObject.kind, x.count ?? 1]),
        [['Lease', 1]],
        'one Event on the leader Lease, not repeated',
      );
      // A cluster of that name adopts it: no longer retained.
      await createCluster(e, rayCluster('gone', `127.0.0.1:${server.port}`));
      tt.same(mine(await scan()), [], 'its cluster is back');
      tt.equal(await gauge(), undefined, 'no series for the namespace');
    },
  );

  t.test('a namespace that a RayCluster being deleted names is neither reported nor collected', async (tt) => {
    const { e, server, r, clock, cached, scan, gauge } = await stage(tt);
    const dying = await createCluster(
      e,
      rayCluster('dying', `127.0.0.1:${server.port}`, {
        headEnv: FROM_SECRET,
        finalizers: ['example.com/hold'],
        annotations: { 'ray.io/external-storage-namespace': 'dying-ns' },
      }),
    );
    tt.teardown(() =>
      e.kube.patch({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'dying' }, [{ op: 'remove', path: '/metadata/finalizers' }], JSON_PATCH),
    );
    const keys = await seedRay(r, 'dying-ns');
    await deleteCluster(e, 'dying');
    await until(async () => (await getCluster(e, 'dying'))?.metadata.deletionTimestamp, 'the cluster is being deleted');
    await cached(['dying']);
    tt.ok(dying.metadata.uid);
    for (let i = 0; i < 3; i++) {
      const report = await scan();
      tt.same(report.orphans, [], `scan ${i + 1}: not an orphan`);
      clock.advance(2 * HOUR);
    }
    tt.same(await rayKeys(r, 'dying-ns'), keys.sort(), 'its keys stay');
    tt.equal(await gauge(), 0, 'gauge 0');
    tt.same(await events(e, 'OrphanedGcsNamespace'), [], 'no Event');
  });

  t.test('the module as `raykeeper controller` runs it: the leader scans at once, then every --orphan-scan-interval', async (tt) => {
    const e = await env(tt);
    const { server, client: r } = await passwordRedis(tt, e);
    await createCluster(e, rayCluster('live', `127.0.0.1:${server.port}`, { headEnv: FROM_SECRET }));
    await seedRay(r, 'left-behind');
    const c = await startOrphanController(tt, e);
    const [ev] = await until(async () => {
      const found = await events(e, 'OrphanedGcsNamespace');
      return found.length > 0 ? found : undefined;
    }, 'the first scan reports the orphan');
    tt.match(ev?.message, 'Storage namespace "left-behind"');
    tt.equal(metricValue(await metricsOf(c.port!), 'raykeeper_gcs_orphaned_namespaces', `redis="redis://127.0.0.1:${server.port}"`), 1);
    tt.equal(
      metricValue(await metricsOf(c.port!), 'raykeeper_gcs_orphan_scans_total', 'result="ok"'),
      1,
      'one scan: the next is an hour away',
    );
  });

  t.test(
    'a scan with no Redis to list does not hold back the next: a GCS-FT cluster added after another kind is scanned at once',
    async (tt) => {
      const e = await env(tt);
      const { server, client: r } = await passwordRedis(tt, e);
      await seedRay(r, 'left-behind');
      const c = await startOrphanController(tt, e);
      await until(() => c.manager.isLeader(), 'the controller leads');
      // First a cluster without GCS FT (a RayJob's, say): its add starts a scan with nothing to list.
      const plain = rayCluster('plain', `127.0.0.1:${server.port}`);
      plain.metadata.annotations = {};
      await createCluster(e, plain);
      await until(async () => (await metricsOf(c.port!)).includes('raykeeper_gcs_orphan_scans_total'), 'the controller serves its metrics');
      await sleep(1_000); // the scan the plain cluster's add starts
      await createCluster(e, rayCluster('late', `127.0.0.1:${server.port}`, { headEnv: FROM_SECRET }));
      const [ev] = await until(async () => {
        const found = await events(e, 'OrphanedGcsNamespace');
        return found.length > 0 ? found : undefined;
      }, 'the scan the GCS-FT cluster starts reports the orphan (not an hour later)');
      tt.match(ev?.message, 'Storage namespace "left-behind"');
      tt.equal(metricValue(await metricsOf(c.port!), 'raykeeper_gcs_orphaned_namespaces', `redis="redis://127.0.0.1:${server.port}"`), 1);
    },
  );

  t.test('redis-cleanup --list --orphans marks what no RayCluster names, a deleting one included', async (tt) => {
    const e = await env(tt);
    const { server, client: r } = await redis(tt, { password: SECRET });
    const address = `127.0.0.1:${server.port}`;
    await createCluster(e, rayCluster('owner', address, { annotations: { 'ray.io/external-storage-namespace': 'cli-owned' } }));
    await createCluster(
      e,
      rayCluster('leaving', address, {
        finalizers: ['example.com/hold'],
        annotations: { 'ray.io/external-storage-namespace': 'cli-leaving' },
      }),
    );
    tt.teardown(() =>
      e.kube.patch({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'leaving' }, [{ op: 'remove', path: '/metadata/finalizers' }], JSON_PATCH),
    );
    await deleteCluster(e, 'leaving');
    for (const ns of ['cli-owned', 'cli-leaving', 'cli-owned1', 'cli-gone']) await seedRay(r, ns);
    const kubeconfig = await kubeconfigFile(tt, e.ns.cp, e.ns.name);
    const out = { stdout: '', stderr: '' };
    const io = {
      env: { RAY_REDIS_ADDRESS: address, REDIS_PASSWORD: SECRET },
      stdout: { write: (s: string) => (out.stdout += s) },
      stderr: { write: (s: string) => (out.stderr += s) },
    };
    tt.equal(await runWith(['--list', '--orphans', '--kubeconfig', kubeconfig], io), 0, out.stderr);
    const orphan = (ns: string) => new RegExp(`\\n${ns}\\s+current\\s+5\\s+\\d+\\s+\\d+\\s+0\\s+yes\\n`).test(out.stdout);
    tt.match(out.stdout, /NAMESPACE\s+LAYOUT\s+KEYS\s+FIELDS\s+BYTES\s+LOOK-ALIKES\s+ORPHAN/);
    tt.same(
      ['cli-gone', 'cli-leaving', 'cli-owned', 'cli-owned1'].filter(orphan),
      ['cli-gone', 'cli-owned1'],
      'exactly the namespaces no RayCluster names',
    );
    tt.match(out.stdout, /\n2 orphaned namespace\(s\): no RayCluster names them\n$/);
    const json = { stdout: '', stderr: '' };
    await runWith(['--list', '--orphans', '--json', '--kubeconfig', kubeconfig], {
      ...io,
      stdout: { write: (s: string) => (json.stdout += s) },
    });
    tt.same(JSON.parse(json.stdout).orphans, ['cli-gone', 'cli-owned1'], '--json: the orphans by name');
    tt.notOk(out.stdout.includes(SECRET) || out.stderr.includes(SECRET) || json.stdout.includes(SECRET), 'no password');
    tt.equal((await rayKeys(r, 'cli-gone')).length, 5, 'listing deletes nothing');
  });
}
