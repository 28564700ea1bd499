// `raykeeper webhook` as a process: flag errors, serving, and a graceful SIGTERM that lets an in-flight
// request finish before the process exits 0.
import t from 'tap';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { connect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { rayCluster, review, FT } from '../admission/fixtures.ts';
import { certDir, httpsCall } from './helpers.ts';
import { run } from '../../webhook/cli.ts';
import { runCapturing } from '../helpers/capture.ts';
import { sleep } from '../../kube/backoff.ts';

const BIN = fileURLToPath(new URL('../../bin/raykeeper.js', import.meta.url));

function runSync(args: string[]) {
  const res = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

t.test('raykeeper --help lists the webhook subcommand', async (t) => {
  const res = runSync(['--help']);
  t.equal(res.code, 0);
  t.match(res.stdout, /^\s+webhook\s+\S/m);
});

const runInProcess = (args: string[]) => runCapturing(run, args);

t.test('flag errors exit 2 with a message', async (t) => {
  const missing = runSync(['webhook']);
  t.equal(missing.code, 2, 'through the binary');
  t.match(missing.stderr, /missing --cert, --key/);
  const rows: Array<[string[], RegExp]> = [
    [['--cert', 'x'], /missing --key/],
    [['--cert', 'a', '--key', 'b', '--port', 'http'], /--port must be a whole number/],
    [['--cert', 'a', '--key', 'b', '--port', '70000'], /--port must be a whole number/],
    [['--cert', 'a', '--key', 'b', '--insecure'], /^raykeeper webhook: unknown option --insecure \(see raykeeper webhook --help\)\n$/],
  ];
  for (const [args, message] of rows) {
    const res = await runInProcess(args);
    t.equal(res.code, 2, args.join(' '));
    t.match(res.stderr, message, args.join(' '));
  }
  const help = await runInProcess(['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /default 9443/);
});

t.test('unreadable certificate files exit 1 with the reason', async (t) => {
  const res = runSync(['webhook', '--cert', '/nonexistent/tls.crt', '--key', '/nonexistent/tls.key', '--port', '0']);
  t.equal(res.code, 1);
  t.match(res.stderr, /ENOENT|no such file/);
});

/** Starts the CLI on port 0 and resolves the port from its JSON log. */
function startWebhook(
  t: { teardown: (fn: () => void) => void },
  certFile: string,
  keyFile: string,
): Promise<{ child: ChildProcess; port: number; logs: () => string }> {
  const child = spawn(process.execPath, [BIN, 'webhook', '--cert', certFile, '--key', keyFile, '--host', '127.0.0.1', '--port', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let out = '';
  child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /"port":(\d+),"msg":"admission webhook listening/.exec(out);
      if (m) resolve({ child, port: Number(m[1]), logs: () => out });
    });
    child.on('exit', (code) => reject(new Error(`webhook exited early (${code}): ${out}`)));
  });
}

t.test('serves, then on SIGTERM finishes the in-flight request, refuses new connections and exits 0', async (t) => {
  const certs = await certDir(t);
  const { child, port, logs } = await startWebhook(t, certs.certFile, certs.keyFile);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));

  const body = JSON.stringify(review('RayCluster', 'CREATE', rayCluster({ annotations: { [FT]: 'true' } })));
  const first = await httpsCall(port, '/mutate-ray-io-v1-raycluster', { ca: certs.bundle.caCert, body });
  t.equal(first.status, 200);
  t.equal(JSON.parse(first.body).response.allowed, true);

  // An in-flight request: headers and half the body sent, then SIGTERM, then the rest.
  const socket = connect({ host: '127.0.0.1', port, ca: certs.bundle.caCert, servername: 'raykeeper-webhook.raykeeper.svc' });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', () => resolve());
    socket.once('error', reject);
  });
  let response = '';
  socket.on('data', (c: Buffer) => (response += c.toString()));
  const half = Math.floor(body.length / 2);
  socket.write(
    `POST /mutate-ray-io-v1-raycluster HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n` +
      body.slice(0, half),
  );
  // The fact that the request is in flight: the server holds its body bytes (its metrics say so).
  const deadlineInFlight = Date.now() + 10_000;
  let inFlight = 0;
  while (Date.now() < deadlineInFlight) {
    const metrics = await httpsCall(port, '/metrics', { ca: certs.bundle.caCert });
    inFlight = Number(/^raykeeper_webhook_request_bytes_in_flight (\d+)$/m.exec(metrics.body)?.[1] ?? 0);
    if (inFlight > 0) break;
  }
  t.equal(inFlight, Buffer.byteLength(body), 'the half-sent request is in flight');
  child.kill('SIGTERM');
  const deadline = Date.now() + 10_000;
  while (!logs().includes('shutting down') && Date.now() < deadline) await sleep(50);
  t.match(logs(), /shutting down: finishing in-flight requests/);

  await t.rejects(httpsCall(port, '/healthz', { ca: certs.bundle.caCert }), /ECONNREFUSED|ECONNRESET|socket hang up/, 'no new connections');

  socket.write(body.slice(half));
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  let timer: NodeJS.Timeout | undefined;
  const ended = await Promise.race([closed.then(() => true), new Promise((r) => (timer = setTimeout(() => r(false), 10_000)))]);
  clearTimeout(timer);
  t.ok(ended, 'the server closed the connection after answering');
  t.match(response, /^HTTP\/1\.1 200 /, 'the in-flight request got its answer');
  t.match(response, /"allowed":true/);
  t.equal(await exited, 0, 'exit code 0');
  t.match(logs(), /admission webhook stopped/);
});
