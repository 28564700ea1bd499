// What bounds the webhook's memory, over a REAL HTTPS listener: request bytes in flight are capped (a
// request waits for room, then gets a 503 AdmissionReview refusal), the bytes are given back when an
// answer is sent or the client leaves, and a body denser in JSON objects than any real review is refused
// before it is parsed.
import t from 'tap';
import { connect, type TLSSocket } from 'node:tls';
import { buildApp, DEFAULT_BODY_LIMIT, ETCD_MAX_OBJECT_BYTES, ADMISSION_ENVELOPE_BYTES } from '../../webhook/app.ts';
import { MAX_JSON_CONTAINERS } from '../../webhook/budget.ts';
import { FT, rayCluster, review } from '../admission/fixtures.ts';
import { capturingLogger, certDir, httpsCall } from './helpers.ts';
import { until } from '../helpers/until.ts';

const CLUSTER = '/mutate-ray-io-v1-raycluster';
const UID = 'e911857d-c318-11e8-bbad-025000000001';
const certs = await certDir(t);
const body = JSON.stringify(review('RayCluster', 'CREATE', rayCluster({ annotations: { [FT]: 'true' } })));
const size = Buffer.byteLength(body);
// Room for one such body in flight, not two.
const app = await buildApp({
  certFile: certs.certFile,
  keyFile: certs.keyFile,
  logger: capturingLogger().logger,
  finalizerEnabled: true,
  bodyBudget: size + Math.floor(size / 2),
  bodyWaitMs: 300,
});
t.teardown(() => app.close());
await app.listen({ host: '127.0.0.1', port: 0 });
const port = (app.server.address() as { port: number }).port;

/** A request whose headers and first half of the body are sent; `finish()` sends the rest, `response` is the raw answer. */
async function halfSent(path = CLUSTER): Promise<{ socket: TLSSocket; finish: () => void; response: Promise<string> }> {
  const socket = connect({ host: '127.0.0.1', port, ca: certs.bundle.caCert, servername: 'localhost' });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', () => resolve());
    socket.once('error', reject);
  });
  let text = '';
  socket.on('data', (c: Buffer) => (text += c.toString()));
  socket.on('error', () => {});
  const response = new Promise<string>((resolve) => {
    socket.on('data', () => {
      if (/\r\n\r\n[\s\S]*\}$/.test(text)) resolve(text);
    });
    socket.on('close', () => resolve(text));
  });
  const half = Math.floor(body.length / 2);
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n${body.slice(0, half)}`,
  );
  return { socket, finish: () => socket.write(body.slice(half)), response };
}

t.test('the body limit is two stored objects and an envelope', async (t) => {
  t.equal(ETCD_MAX_OBJECT_BYTES, 1.5 * 1024 * 1024, "etcd's default --max-request-bytes");
  t.equal(DEFAULT_BODY_LIMIT, 2 * ETCD_MAX_OBJECT_BYTES + ADMISSION_ENVELOPE_BYTES);
  t.ok(DEFAULT_BODY_LIMIT > 3 * 1024 * 1024, "a CREATE up to the API server's 3 MiB request limit fits");
});

t.test('a request waits for room, then gets a 503 AdmissionReview; the held bytes return when the first is answered', async (t) => {
  const first = await halfSent();
  await until(() => app.bodyBudget.used === size, 'the first request holds its bytes', 10_000, 10);
  const second = await httpsCall(port, CLUSTER, { ca: certs.bundle.caCert, body });
  t.equal(second.status, 503, 'no room within bodyWaitMs');
  t.equal(second.headers['connection'], 'close');
  const refusal = JSON.parse(second.body);
  t.equal(refusal.kind, 'AdmissionReview');
  t.same(refusal.response.status.code, 503);
  t.equal(refusal.response.allowed, false);
  t.equal(refusal.response.uid, '', 'the body was never read: no uid');
  t.match(refusal.response.status.message, /limit of \d+ request bytes in flight/);

  // A waiter is admitted as soon as the first finishes.
  const waiting = httpsCall(port, CLUSTER, { ca: certs.bundle.caCert, body });
  await until(() => app.bodyBudget.waiting === 1, 'the third request waits', 10_000, 10);
  first.finish();
  t.match(await first.response, /^HTTP\/1\.1 200 [\s\S]*"allowed":true/, 'the first is answered');
  const third = await waiting;
  t.equal(third.status, 200, 'the waiter got in');
  t.equal(JSON.parse(third.body).response.uid, UID);
  first.socket.destroy();
  await until(() => app.bodyBudget.used === 0, 'all bytes given back', 10_000, 10);
  const metrics = await app.inject({ method: 'GET', url: '/metrics' });
  t.match(metrics.body, /raykeeper_webhook_errors_total\{resource="raycluster",reason="overloaded"\} 1/);
});

t.test('a client that leaves mid-body gives its bytes back', async (t) => {
  const gone = await halfSent();
  await until(() => app.bodyBudget.used === size, 'held', 10_000, 10);
  gone.socket.destroy();
  await until(() => app.bodyBudget.used === 0, 'released after the client left', 10_000, 10);
  t.equal((await httpsCall(port, CLUSTER, { ca: certs.bundle.caCert, body })).status, 200);
});

t.test('a client that leaves while waiting takes nothing', async (t) => {
  const holder = await halfSent();
  await until(() => app.bodyBudget.used === size, 'held', 10_000, 10);
  const waiter = await halfSent();
  await until(() => app.bodyBudget.waiting === 1, 'waiting', 10_000, 10);
  waiter.socket.destroy();
  holder.finish();
  await holder.response;
  holder.socket.destroy();
  await until(() => app.bodyBudget.used === 0 && app.bodyBudget.waiting === 0, 'nothing held, nobody waiting', 10_000, 10);
});

t.test('every request with a body is charged, whatever spelling of the path the router accepts', async (t) => {
  for (const path of ['/mutate%2Dray-io-v1-raycluster', `https://localhost${CLUSTER}`, '/not-an-admission-path']) {
    const sent = await halfSent(path);
    await until(() => app.bodyBudget.used === size, `${path}: its bytes are held while its body is read`, 10_000, 10);
    sent.socket.destroy();
    await until(() => app.bodyBudget.used === 0, `${path}: given back`, 10_000, 10);
  }
  t.pass('charged and given back for each spelling');
});

t.test('requests pipelined on a connection that dies while they wait take nothing', async (t) => {
  const holder = await halfSent();
  await until(() => app.bodyBudget.used === size, 'held', 10_000, 10);
  const socket = connect({ host: '127.0.0.1', port, ca: certs.bundle.caCert, servername: 'localhost' });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', () => resolve());
    socket.once('error', reject);
  });
  socket.on('error', () => {});
  const request = `POST ${CLUSTER} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n${body}`;
  socket.write(request + request);
  await until(() => app.bodyBudget.waiting >= 1, 'a pipelined request waits', 10_000, 10);
  socket.destroy();
  holder.finish();
  await holder.response;
  holder.socket.destroy();
  await until(() => app.bodyBudget.used === 0 && app.bodyBudget.waiting === 0, 'nothing held, nobody waiting', 10_000, 10);
  t.equal((await httpsCall(port, CLUSTER, { ca: certs.bundle.caCert, body })).status, 200, 'the full budget is there for the next request');
});

t.test('a body with more JSON objects and arrays than any real review is refused before parsing', async (t) => {
  const big = await buildApp({ certFile: certs.certFile, keyFile: certs.keyFile, logger: capturingLogger().logger });
  t.teardown(() => big.close());
  const make = (containers: number) =>
    JSON.stringify(review('RayCluster', 'CREATE', { ...rayCluster(), filler: [] })).replace(
      '"filler":[]',
      `"filler":[${Array(containers).fill('{}').join(',')}]`,
    );
  const skeleton = (make(0).match(/[{[]/g) ?? []).length;
  const over = await big.inject({
    method: 'POST',
    url: CLUSTER,
    headers: { 'content-type': 'application/json' },
    payload: make(MAX_JSON_CONTAINERS - skeleton + 1),
  });
  t.equal(over.statusCode, 413);
  t.match(over.json().response.status.message, new RegExp(`holds ${MAX_JSON_CONTAINERS + 1} JSON objects and arrays`));
  const at = await big.inject({
    method: 'POST',
    url: CLUSTER,
    headers: { 'content-type': 'application/json' },
    payload: make(MAX_JSON_CONTAINERS - skeleton),
  });
  t.equal(at.statusCode, 200, 'exactly at the cap is answered');
  t.equal(at.json().response.uid, UID);
});
