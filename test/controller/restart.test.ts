// `raykeeper controller` as real child processes: killed mid-way and restarted, and two replicas with
// leader election: killed, paused (SIGSTOP; also in the middle of a reconcile about to write), and
// behind an API server that answers too late.
import t, { type Test } from 'tap';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { kubeconfigDocument } from '../../localcluster/control-plane.ts';
import { InformerFactory } from '../../kube/informer.ts';
import {
  controllerChild,
  createCluster,
  env,
  events,
  FINALIZER,
  getCluster,
  jobRunner,
  leaderFlags,
  listJobs,
  metricsOf,
  metricValue,
  rayCluster,
  rayKeys,
  redis,
  seedRay,
  until,
  type ChildController,
  type Env,
} from '../helpers/harness.ts';
import { RAYCLUSTERS } from '../../src/types.ts';
import { LEASES } from '../../kube/resources.ts';
import { EVENT_CREATED_REDIS_CLEANUP_JOB, EVENT_FAILED_TO_CREATE_REDIS_CLEANUP_JOB } from '../../src/event-reasons.ts';

t.test('controller killed after creating the Job, restarted twice: exactly one Job, finalizer released once cleaned', async (tt) => {
  const e = await env(tt);
  const { server, client } = await redis(tt);
  const a = await controllerChild(tt, e);
  const c = await createCluster(e, rayCluster('restart', `127.0.0.1:${server.port}`));
  await seedRay(client, c.metadata.uid!);
  await until(
    async () => (await getCluster(e, 'restart'))?.metadata.finalizers?.includes(FINALIZER),
    'finalizer added by the first controller',
  );
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'restart' });
  await until(async () => (await listJobs(e)).length === 1, 'Job created');
  await a.kill('SIGKILL');

  // A second controller comes up while the Job is still pending: it must not make another one.
  const b = await controllerChild(tt, e);
  await b.port;
  await until(
    async () => (metricValue(await metricsOf(await b.port), 'raykeeper_raycluster_actions_total', 'action="waitForJob"') ?? 0) >= 1,
    'the new controller has looked at the existing Job',
  );
  tt.equal((await listJobs(e)).length, 1, 'still one Job after the restart');
  tt.ok(await getCluster(e, 'restart'), 'not released while the Job runs');
  await b.kill('SIGKILL');

  // The Job completes while no controller runs; the next one releases the finalizer.
  const runner = await jobRunner(tt, e);
  await until(
    async () => (await listJobs(e))[0]?.status?.conditions?.some((x) => x.type === 'Complete' && x.status === 'True'),
    'the Job completed',
  );
  await runner.stop();
  tt.ok(await getCluster(e, 'restart'), 'still held: nobody released it yet');
  await controllerChild(tt, e);
  await until(async () => (await getCluster(e, 'restart')) === undefined, 'the third controller releases the finalizer');
  tt.same(await rayKeys(client, c.metadata.uid!), []);
  tt.equal((await listJobs(e)).length, 1, 'exactly one Job over three controller lifetimes');
});

t.test(
  'two replicas: only the leader reconciles; the standby takes over when the leader is killed; SIGTERM releases the Lease',
  async (tt) => {
    const e = await env(tt);
    const { server, client } = await redis(tt);
    const flags = (id: string) => leaderFlags(e.ns.name, 'rk', id);
    const replicas = { one: await controllerChild(tt, e, flags('one')), two: await controllerChild(tt, e, flags('two')) };
    const leaseRef = { ...LEASES, namespace: e.ns.name, name: 'rk' };
    const holder = async () => (await e.kube.getOrUndefined(leaseRef))?.spec!.holderIdentity ?? undefined;
    const first = (await until(holder, 'a leader')) as 'one' | 'two';
    const second = first === 'one' ? 'two' : 'one';
    const leader = replicas[first];
    const standby = replicas[second];
    await until(async () => metricValue(await metricsOf(await leader.port), 'raykeeper_leader') === 1, 'leader reports itself');
    tt.equal(metricValue(await metricsOf(await standby.port), 'raykeeper_leader'), 0, 'standby reports 0');

    const c = await createCluster(e, rayCluster('ha', `127.0.0.1:${server.port}`));
    await seedRay(client, c.metadata.uid!);
    await until(async () => (await getCluster(e, 'ha'))?.metadata.finalizers?.includes(FINALIZER), 'the leader adds the finalizer');
    const standbyMetrics = await metricsOf(await standby.port);
    tt.equal(
      metricValue(standbyMetrics, 'raykeeper_controller_reconcile_total', 'controller="raycluster",result="success"'),
      undefined,
      'the standby reconciled nothing',
    );
    // Ready once its caches synced (under load that may come after the leader's first write): wait for it.
    await until(
      async () => (await fetch(`http://127.0.0.1:${await standby.port}/readyz`)).status === 200,
      'the standby to be ready (warm cache)',
    );
    tt.pass('the standby is ready (warm cache)');

    await leader.kill('SIGKILL');
    await until(async () => (await holder()) === second, 'the standby takes the lease', 30_000);
    await until(async () => metricValue(await metricsOf(await standby.port), 'raykeeper_leader') === 1, 'new leader reports itself');
    await jobRunner(tt, e);
    await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'ha' });
    await until(async () => (await getCluster(e, 'ha')) === undefined, 'the new leader completes the deletion');
    tt.same(await rayKeys(client, c.metadata.uid!), []);
    tt.equal((await listJobs(e)).length, 1);

    standby.proc.kill('SIGTERM');
    tt.equal(await standby.exited, 0, 'graceful exit on SIGTERM');
    tt.equal((await holder()) ?? '', '', 'the lease was released on SIGTERM');
    tt.match(standby.log(), /released the lease/);
  },
);

interface LeaseRecord {
  holder: string;
  /** ms since the epoch (MicroTime cut to ms). */
  acquireTime: number;
  renewTime: number;
  durationMs: number;
}

const ms = (microTime: string | null | undefined) => Date.parse(String(microTime).replace(/\.(\d{3})\d*Z$/, '.$1Z'));

/** Every version of the Lease `name`, as a watch delivers them (the Lease's history). */
async function leaseHistory(tt: Test, e: Env, name: string): Promise<LeaseRecord[]> {
  const factory = new InformerFactory(e.kube, { namespace: e.ns.name });
  const informer = factory.get(LEASES);
  const history: LeaseRecord[] = [];
  informer.on((type, obj) => {
    const spec = (
      obj as { spec?: { holderIdentity?: string | null; acquireTime?: string; renewTime?: string; leaseDurationSeconds?: number } }
    ).spec;
    if (type === 'delete' || obj.metadata?.name !== name || !spec) return;
    history.push({
      holder: spec.holderIdentity ?? '',
      acquireTime: ms(spec.acquireTime),
      renewTime: ms(spec.renewTime),
      durationMs: (spec.leaseDurationSeconds ?? 0) * 1000,
    });
  });
  factory.start();
  await factory.waitForSync();
  tt.teardown(() => factory.stop());
  return history;
}

/** The JSON log lines of a child controller with this message. */
const logLines = (c: ChildController, msg: string) =>
  c
    .log()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown> & { time: number })
    .filter((l) => l.msg === msg);

t.test(
  'a paused leader (SIGSTOP): the standby takes over only once the lease expired; resumed, the old leader exits without leading again',
  async (tt) => {
    const e = await env(tt);
    const history = await leaseHistory(tt, e, 'paused');
    const flags = (id: string) => leaderFlags(e.ns.name, 'paused', id);
    const one = await controllerChild(tt, e, flags('one'));
    await until(() => history.some((r) => r.holder === 'one'), 'one leads');
    const two = await controllerChild(tt, e, flags('two'));
    await until(() => logLines(two, 'leader observed').length > 0, 'two sees the leader');

    one.proc.kill('SIGSTOP');
    await until(() => history.some((r) => r.holder === 'two'), 'two takes the lease', 30_000);
    one.proc.kill('SIGCONT');
    tt.equal(await one.exited, 1, 'the resumed old leader exits 1');

    const taken = history.findIndex((r) => r.holder === 'two');
    const lastOfOne = history[taken - 1]!;
    const firstOfTwo = history[taken]!;
    tt.equal(lastOfOne.holder, 'one');
    tt.ok(
      firstOfTwo.acquireTime - lastOfOne.renewTime >= lastOfOne.durationMs,
      `two acquired ${firstOfTwo.acquireTime - lastOfOne.renewTime} ms after one's last renew (lease ${lastOfOne.durationMs} ms)`,
    );
    const stopped = logLines(one, 'stopped leading');
    tt.equal(stopped.length, 1);
    tt.match(stopped[0]!.reason, /renew deadline/);
    const leadingUntil = Date.parse(String(stopped[0]!.leadingUntil));
    tt.ok(
      leadingUntil <= lastOfOne.renewTime + 2000,
      "one's leadership ended at its renew deadline (its own clock, measured from the renew it sent)",
    );
    tt.ok(leadingUntil < firstOfTwo.acquireTime, 'before two acquired the lease: never two leaders');
    tt.ok(logLines(two, 'became leader')[0]!.time >= leadingUntil, 'two believed it led only after one stopped believing it');
    tt.equal(logLines(one, 'became leader').length, 1, 'one never led again');
    tt.equal(logLines(one, 'lost leadership: exiting (restart as a new candidate)').length, 1);
    // One's exit is before this point; a renew by two after it shows the watch has delivered everything.
    const exitedAt = Date.now();
    await until(() => history.some((r) => r.holder === 'two' && r.renewTime > exitedAt), 'two renews after one exited');
    tt.same(
      history.slice(taken).filter((r) => r.holder !== 'two'),
      [],
      'no write by one after two took over',
    );
  },
);

/** A kubeconfig file for the test namespace whose server is `server` (a proxy in front of the API server). */
async function kubeconfigVia(tt: Test, e: Env, server: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'raykeeper-proxied-'));
  tt.teardown(() => rm(dir, { recursive: true, force: true }));
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(kubeconfig, stringify(kubeconfigDocument({ ...e.ns.cp.info, server }, e.ns.name)), { mode: 0o600 });
  return kubeconfig;
}

/** A TCP proxy to `target` whose answers (bytes from the target) can be held back `delayMs`. */
async function delayingProxy(tt: Test, target: URL): Promise<{ url: string; delayMs: number }> {
  const sockets = new Set<Socket>();
  const proxy = { url: '', delayMs: 0 };
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      if (proxy.delayMs > 0) setTimeout(() => client.write(chunk), proxy.delayMs).unref();
      else client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  tt.teardown(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return proxy;
}

t.test('a slow API server: the leader stops leading and exits before the lease could expire', async (tt) => {
  const e = await env(tt);
  const proxy = await delayingProxy(tt, new URL(e.ns.cp.info.server));
  const kubeconfig = await kubeconfigVia(tt, e, proxy.url);
  const leaseDurationMs = 4000;
  // The last --kubeconfig wins: everything this controller asks goes through the proxy.
  const leader = await controllerChild(tt, e, [
    '--kubeconfig',
    kubeconfig,
    '--leader-elect',
    '--lease-namespace',
    e.ns.name,
    '--lease-name',
    'slow',
    '--identity',
    'slow',
    '--lease-duration',
    String(leaseDurationMs / 1000),
    '--renew-deadline',
    '2',
    '--retry-period',
    '0.5',
  ]);
  const lease = async () => e.kube.getOrUndefined({ ...LEASES, namespace: e.ns.name, name: 'slow' });
  await until(async () => (await lease())?.spec!.holderIdentity === 'slow', 'the leader holds the lease');
  await until(() => logLines(leader, 'reconciler started').length > 0, 'the leader runs its reconcilers');

  proxy.delayMs = 20_000; // every answer now comes 20 s late: longer than the renew deadline
  const slowFrom = Date.now();
  tt.equal(await leader.exited, 1, 'the leader exits 1');
  const exitedAt = Date.now();
  const lastRenew = ms((await lease())!.spec!.renewTime); // the API server's view: the latest renew that reached it
  tt.comment(
    `slow from ${slowFrom - lastRenew} ms after the last renew; exited ${exitedAt - lastRenew} ms after it (lease ${leaseDurationMs} ms)`,
  );
  tt.ok(exitedAt < lastRenew + leaseDurationMs, 'gone before the lease could expire for anyone else');
  tt.match(logLines(leader, 'stopped leading')[0]?.reason, /renew deadline/);
  tt.equal(logLines(leader, 'lost leadership: exiting (restart as a new candidate)').length, 1);
});

interface ProxiedRequest {
  method: string;
  url: string;
  at: number;
}

interface ApiProxy {
  /** `http://127.0.0.1:<port>`: the client speaks plain HTTP to the proxy, the proxy HTTPS to the API server. */
  url: string;
  /** Every request the proxy received, in order. */
  requests: ProxiedRequest[];
  /** Holds the next request matching `match` until `release()`, which forwards it and resolves once its answer is written back. */
  hold(match: (r: ProxiedRequest) => boolean): { seen: Promise<void>; release(): Promise<void> };
  /** From now on, requests matching `match` (also those waiting for their answer) get no answer. */
  mute(match: (r: ProxiedRequest) => boolean): void;
}

/** An HTTP-level proxy to the test API server: it sees each request (method, path) and can hold or mute them. */
async function apiProxy(tt: Test, e: Env): Promise<ApiProxy> {
  const target = new URL(e.ns.cp.info.server);
  const agent = new HttpsAgent({ keepAlive: true, ca: e.ns.cp.info.caCert });
  const muted: Array<(r: ProxiedRequest) => boolean> = [];
  let held: { match: (r: ProxiedRequest) => boolean; onSeen: (forward: () => Promise<void>) => void } | undefined;
  const proxy: ApiProxy = {
    url: '',
    requests: [],
    hold(match) {
      let seen!: () => void;
      let forward: (() => Promise<void>) | undefined;
      const seenP = new Promise<void>((resolve) => (seen = resolve));
      held = { match, onSeen: (f) => ((forward = f), seen()) };
      return { seen: seenP, release: () => forward!() };
    },
    mute(match) {
      muted.push(match);
    },
  };
  const sockets = new Set<Socket>();
  const server = createHttpServer((req, res) => {
    const r: ProxiedRequest = { method: req.method ?? 'GET', url: req.url ?? '/', at: Date.now() };
    proxy.requests.push(r);
    const isMuted = () => muted.some((m) => m(r));
    const forward = () =>
      new Promise<void>((done) => {
        const up = httpsRequest(
          {
            hostname: target.hostname,
            port: target.port,
            method: r.method,
            path: r.url,
            headers: { ...req.headers, host: target.host },
            agent,
          },
          (upRes) => {
            if (isMuted()) return void upRes.resume();
            res.writeHead(upRes.statusCode ?? 502, upRes.headers);
            res.on('finish', () => done());
            upRes.pipe(res);
          },
        );
        up.on('error', () => res.destroy());
        req.pipe(up);
      });
    if (isMuted()) return;
    if (held?.match(r)) {
      const h = held;
      held = undefined;
      h.onSeen(forward);
      return;
    }
    void forward();
  });
  server.keepAliveTimeout = 0; // idle connections stay open (a paused client finds them as it left them)
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  tt.teardown(() => {
    for (const s of sockets) s.destroy();
    server.close();
    agent.destroy();
  });
  return proxy;
}

/** Whether process `pid` is stopped (SIGSTOP): state T in /proc/<pid>/stat. */
const isStopped = (pid: number) => /^\d+ \(.*\) T /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));

t.test('a leader paused in a reconcile about to write: resumed after the takeover, the write is not sent and it exits', async (tt) => {
  const e = await env(tt);
  const history = await leaseHistory(tt, e, 'fence');
  const proxy = await apiProxy(tt, e);
  const flags = (id: string) => leaderFlags(e.ns.name, 'fence', id);
  const one = await controllerChild(tt, e, ['--kubeconfig', await kubeconfigVia(tt, e, proxy.url), ...flags('one')]);
  await until(() => history.some((r) => r.holder === 'one'), 'one leads');
  await createCluster(e, rayCluster('fenced', '127.0.0.1:1'));
  await until(async () => (await getCluster(e, 'fenced'))?.metadata.finalizers?.includes(FINALIZER), 'one adds the finalizer');
  // Two reconciles only RayJobs: nothing but one could change the cluster, or create its cleanup Job.
  const two = await controllerChild(tt, e, [...flags('two'), '--reconcilers', 'rayjob']);
  await until(() => logLines(two, 'leader observed').length > 0, 'two sees the leader');

  // One's deletion reconcile reads the cluster, lists its pods, then creates the cleanup Job: hold the list.
  const podList = proxy.hold(
    (r) =>
      r.method === 'GET' &&
      r.url.startsWith(`/api/v1/namespaces/${e.ns.name}/pods?`) &&
      new URL(r.url, 'http://x').searchParams.get('labelSelector') === 'ray.io/cluster=fenced',
  );
  await e.kube.delete({ ...RAYCLUSTERS, namespace: e.ns.name, name: 'fenced' });
  await podList.seen;
  // A real pause freezes in-flight Lease requests too: muted from now on, they never answer, so one's
  // renew loop learns the end of its term only from its clock (a timer), after its I/O on resume.
  proxy.mute((r) => r.url.includes('/leases/'));
  one.proc.kill('SIGSTOP');
  await until(() => isStopped(one.proc.pid!), 'one is stopped');
  const paused = (await getCluster(e, 'fenced'))!;
  await podList.release(); // the answer waits in one's socket: the first thing it handles on resume
  await until(() => history.some((r) => r.holder === 'two'), 'two takes the lease', 30_000);
  const resumedAt = Date.now();
  one.proc.kill('SIGCONT');
  tt.equal(await one.exited, 1, 'the resumed old leader exits 1');

  // The Lease's own requests are left out: muted here, and a stale one is refused by its resourceVersion.
  const writes = proxy.requests.filter((r) => r.at >= resumedAt && r.method !== 'GET' && !r.url.includes('/leases/'));
  tt.same(writes, [], 'no write of one reached the API server after it resumed');
  tt.same(await listJobs(e), [], 'no cleanup Job');
  const now = (await getCluster(e, 'fenced'))!;
  tt.equal(now.metadata.resourceVersion, paused.metadata.resourceVersion, 'the cluster is as it was when one paused');
  tt.same(now.metadata.managedFields, paused.metadata.managedFields);
  tt.same(
    (await events(e)).filter((x) => x.reason === EVENT_CREATED_REDIS_CLEANUP_JOB || x.reason === EVENT_FAILED_TO_CREATE_REDIS_CLEANUP_JOB),
    [],
    'no Event about the Job, not even a Warning',
  );
  // On SIGCONT epoll_wait returns EINTR and libuv runs the due timers before polling again, so the renew
  // loop usually aborts the reconcile before the held answer is read; the fence covers the other case
  // (test/kube/write-fence.test.ts). Either way: no retry, and nothing written.
  tt.equal(logLines(one, 'reconcile failed; will retry').length, 0, 'no retry');
  tt.match(logLines(one, 'stopped leading')[0]?.reason, /renew deadline/);
  tt.equal(logLines(one, 'lost leadership: exiting (restart as a new candidate)').length, 1);
});
