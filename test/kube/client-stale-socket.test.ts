// The API client and a kept-alive connection the server closed while idle: the next request on it fails
// before any answer. A read (GET) or a DELETE is sent again once on a new connection; a POST is not (it
// may have been applied). The peer here is a plain HTTP server that drops the second request of every
// connection unanswered, the way an idle connection closed by the API server as a request arrives looks.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { KubeClient } from '../../kube/client.ts';
import type { KubeCredentials } from '../../kube/kubeconfig.ts';
import { CONFIGMAPS } from '../../kube/resources.ts';

async function droppingServer(t: Test): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  const perSocket = new WeakMap<object, number>();
  const server: Server = createServer((req, res) => {
    const n = (perSocket.get(req.socket) ?? 0) + 1;
    perSocket.set(req.socket, n);
    seen.push(`${req.method} #${n}`);
    req.resume();
    req.on('end', () => {
      if (n >= 2) {
        req.socket.destroy(); // no answer: what a reused connection closed by the peer gives
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', connection: 'keep-alive' });
      res.end(JSON.stringify({ kind: 'ConfigMap', metadata: { name: 'x' } }));
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  t.teardown(() => server.closeAllConnections());
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

function client(url: string): KubeClient {
  const credentials: KubeCredentials = {
    getCurrentCluster: () => ({ name: 'local', server: url, skipTLSVerify: true }) as ReturnType<KubeCredentials['getCurrentCluster']>,
    getCurrentUser: () => null,
    applyToHTTPSOptions: async () => {},
  };
  return new KubeClient(credentials, { fieldManager: '' });
}

const ref = CONFIGMAPS.at('n', 'x');

t.test('a GET on a connection the server dropped is sent again on a new one', async (t) => {
  const { url, seen } = await droppingServer(t);
  const kube = client(url);
  t.teardown(() => kube.close());
  await kube.get(ref);
  const second = await kube.get(ref);
  t.equal(second.metadata.name, 'x', 'answered');
  t.same(seen, ['GET #1', 'GET #2', 'GET #1'], 'the second went out on the kept-alive connection, was dropped, and again on a new one');
  t.equal(kube.requestCount('GET', 200), 2, 'counted once per answer');
});

t.test('a DELETE too', async (t) => {
  const { url, seen } = await droppingServer(t);
  const kube = client(url);
  t.teardown(() => kube.close());
  await kube.get(ref);
  await kube.delete(ref);
  t.same(seen, ['GET #1', 'DELETE #2', 'DELETE #1']);
});

t.test('a POST is not sent again: its error reaches the caller', async (t) => {
  const { url, seen } = await droppingServer(t);
  const kube = client(url);
  t.teardown(() => kube.close());
  await kube.get(ref);
  await t.rejects(kube.create(CONFIGMAPS.at('n'), { metadata: { name: 'y' } }), /socket hang up|ECONNRESET/);
  t.same(seen, ['GET #1', 'POST #2'], 'one attempt');
});
