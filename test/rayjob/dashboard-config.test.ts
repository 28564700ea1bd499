// The dashboard client against a local HTTP server (the fake dashboard, and servers that misbehave),
// and the controller settings parsed from flags and environment.
import t from 'tap';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DashboardClient } from '../../controller/rayjob/dashboard.ts';
import { parseDashboardUrls, rayJobSettings, SettingsError } from '../../src/rayjob/config.ts';
import { startFakeDashboard } from './helpers/fake-dashboard.ts';
import { sleep } from '../../kube/backoff.ts';

async function serve(t: { teardown(fn: () => unknown): void }, handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server: Server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

t.test('against the fake dashboard: submit, get, duplicate, stop', async (t) => {
  const d = await startFakeDashboard();
  t.teardown(() => d.close());
  const c = new DashboardClient({ timeoutMs: 2000 });
  t.same(await c.getJob(d.url, 'nope'), { kind: 'notFound' });
  t.same(await c.submitJob(d.url, { entrypoint: 'sleep 30', submission_id: 'j1' }), { submissionId: 'j1', duplicate: false });
  t.same(
    await c.submitJob(d.url, { entrypoint: 'sleep 30', submission_id: 'j1' }),
    { submissionId: 'j1', duplicate: true },
    'a duplicate id counts as submitted',
  );
  const got = await c.getJob(d.url, 'j1');
  t.equal(got.kind, 'found');
  if (got.kind === 'found') t.equal(got.info.status, 'RUNNING');
  t.equal(await c.stopJob(d.url, 'j1'), true);
  const stopped = await c.getJob(d.url, 'j1');
  if (stopped.kind === 'found') t.equal(stopped.info.status, 'STOPPED');
  t.equal(await c.stopJob(d.url, 'j1'), false, 'stopping a finished job is a no-op');
  t.equal(await c.stopJob(d.url, 'unknown'), false, 'unknown id: nothing to stop');
  await c.submitJob(d.url, { entrypoint: 'exit 7', submission_id: 'j2' });
  for (let i = 0; i < 50; i++) {
    const o = await c.getJob(d.url, 'j2');
    if (o.kind === 'found' && o.info.status === 'FAILED') {
      t.match(o.info.message, /exit code 7/);
      t.ok(typeof o.info.end_time === 'number');
      break;
    }
    await sleep(50);
  }
  d.down = true;
  const down = await c.getJob(d.url, 'j1');
  t.equal(down.kind, 'error', 'connection reset -> error observation');
});

t.test('misbehaving dashboards become "error" observations, never exceptions', async (t) => {
  const c = new DashboardClient({ timeoutMs: 300 });
  const slow = await serve(t, () => undefined); // never answers
  const started = Date.now();
  const timedOut = await c.getJob(slow, 'x');
  t.equal(timedOut.kind, 'error');
  if (timedOut.kind === 'error') t.match(timedOut.message, /timed out/);
  t.ok(Date.now() - started < 5000, 'bounded by the timeout');
  const broken = await serve(t, (req, res) => {
    if (req.url?.endsWith('/garbage')) {
      res.writeHead(200);
      res.end('{not json');
    } else if (req.url?.endsWith('/wrong')) {
      res.writeHead(200);
      res.end('{"hello": 1}');
    } else {
      res.writeHead(503);
      res.end('overloaded');
    }
  });
  t.match(await c.getJob(broken, 'garbage'), { kind: 'error', message: /invalid JSON/ });
  t.match(await c.getJob(broken, 'wrong'), { kind: 'error', message: /not a Ray JobDetails/ });
  t.match(await c.getJob(broken, 'x'), { kind: 'error', message: /HTTP 503 overloaded/ });
  await t.rejects(c.submitJob(broken, { entrypoint: 'x', submission_id: 'y' }), /HTTP 503/);
  await t.rejects(c.stopJob(broken, 'y'), /HTTP 503/);
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const refused = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
  await new Promise<void>((r) => closed.close(() => r()));
  t.match(await c.getJob(refused, 'x'), { kind: 'error', message: /ECONNREFUSED/ });
});

t.test("a token-auth cluster's token: KubeRay's header on every call, none without; not in any message", async (t) => {
  const seen: Array<[string | undefined, string | undefined, string | undefined]> = [];
  const url = await serve(t, (req, res) => {
    seen.push([req.method, req.headers['x-ray-authorization'] as string | undefined, req.headers.authorization]);
    res.writeHead(403);
    res.end('Forbidden: Invalid authentication token');
  });
  const c = new DashboardClient({ timeoutMs: 2000 });
  const secret = 'tok-123';
  const got = await c.getJob({ url, token: secret }, 'j');
  const submit = await c.submitJob({ url, token: secret }, { entrypoint: 'x', submission_id: 'j' }).catch((e: Error) => e.message);
  const stop = await c.stopJob({ url, token: secret }, 'j').catch((e: Error) => e.message);
  await c.getJob(url, 'j');
  await c.getJob({ url }, 'j');
  t.same(seen, [
    ['GET', 'Bearer tok-123', undefined],
    ['POST', 'Bearer tok-123', undefined],
    ['POST', 'Bearer tok-123', undefined],
    ['GET', undefined, undefined],
    ['GET', undefined, undefined],
  ]);
  t.match(got, { kind: 'error', message: /HTTP 403 Forbidden/ });
  t.notOk(JSON.stringify([got, submit, stop]).includes(secret), 'the token is in no error');
});

t.test('settings: flags over env over defaults', async (t) => {
  const d = rayJobSettings({}, {});
  t.equal(d.dashboardUrl({ namespace: 'ns', cluster: 'c' }), 'http://c-head-svc.ns.svc:8265', 'controller default');
  t.equal(
    d.machine.submitterDashboardUrl({ namespace: 'ns', cluster: 'c' }),
    'http://c-head-svc.ns.svc.cluster.local:8265',
    'submitter default (KubeRay form)',
  );
  t.equal(d.machine.gracePeriodSeconds, 300);
  t.equal(d.machine.statusCheckTimeoutSeconds, 300);
  t.equal(d.machine.submitterFinishedTimeoutSeconds, 30);
  t.equal(d.machine.deleteRayJobAfterJobFinishes, false);
  t.equal(d.dashboardTimeoutMs, 5000);
  t.same(d.machine.submitter, {});

  const e = rayJobSettings(
    { 'rayjob-dashboard-url-template': 'http://127.0.0.1:9000/{namespace}/{cluster}' },
    {
      RAYKEEPER_RAYJOB_DASHBOARD_URL_TEMPLATE: 'http://ignored',
      RAYKEEPER_RAYJOB_DASHBOARD_URLS: 'ns/special=http://127.0.0.1:7000/, other/x=https://gw.example/x',
      RAYKEEPER_RAYJOB_SUBMITTER_RAY_COMMAND: '/opt/ray/bin/ray',
      RAYKEEPER_RAYJOB_SUBMITTER_IMAGE: 'my/ray:1',
      RAYKEEPER_RAYJOB_DASHBOARD_TIMEOUT_SECONDS: '1.5',
      RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS: '60',
      RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS: 'soon',
      DELETE_RAYJOB_CR_AFTER_JOB_FINISHES: 'TRUE',
    },
  );
  t.equal(e.dashboardUrl({ namespace: 'ns', cluster: 'c' }), 'http://127.0.0.1:9000/ns/c', 'the flag wins over env');
  t.equal(e.dashboardUrl({ namespace: 'ns', cluster: 'special' }), 'http://127.0.0.1:7000', 'per-cluster override');
  t.equal(e.dashboardUrl({ namespace: 'other', cluster: 'x' }), 'https://gw.example/x');
  t.same(e.machine.submitter, { rayCommand: '/opt/ray/bin/ray', image: 'my/ray:1' });
  t.equal(e.dashboardTimeoutMs, 1500);
  t.equal(e.machine.gracePeriodSeconds, 60, 'KubeRay env name');
  t.equal(e.machine.statusCheckTimeoutSeconds, 300, 'unparsable falls back like KubeRay Atoi');
  t.equal(e.machine.deleteRayJobAfterJobFinishes, true, 'case-insensitive true');
});

t.test('settings errors are explicit', async (t) => {
  t.throws(() => rayJobSettings({ 'rayjob-dashboard-url-template': 'c-head-svc:8265' }, {}), SettingsError);
  t.throws(() => rayJobSettings({ 'rayjob-dashboard-timeout': '0' }, {}), /positive/);
  t.throws(() => rayJobSettings({ 'rayjob-submitter-finished-timeout': '-1' }, {}), /positive/);
  t.throws(() => parseDashboardUrls('cluster=http://x'), /namespace\/cluster/);
  t.throws(() => parseDashboardUrls('ns/c=ftp://x'), /namespace\/cluster/);
  t.same([...parseDashboardUrls(' , ns/c=http://x/ ,')], [['ns/c', 'http://x']]);
});

t.test('the fake dashboard refuses browser-looking POSTs as Ray does; the client is not one', async (t) => {
  const d = await startFakeDashboard();
  t.teardown(() => d.close());
  const viaFetch = await fetch(`${d.url}/api/jobs/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: '{"entrypoint":"true"}',
  });
  t.equal(viaFetch.status, 405, "fetch's Sec-Fetch-Mode makes it browser traffic");
  t.match(await viaFetch.text(), /not allowed for browser traffic/);
  const c = new DashboardClient({ timeoutMs: 2000 });
  t.same(
    await c.submitJob(d.url, { entrypoint: 'true', submission_id: 's1' }),
    { submissionId: 's1', duplicate: false },
    'our client gets through',
  );
  t.equal(await c.stopJob(d.url, 's1').then(() => 'answered'), 'answered');
});
