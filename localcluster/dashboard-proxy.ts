// One loopback address for every Ray head's dashboard in `raykeeper dev`: the ray pod runner gives each
// head a free dashboard port, and the RayJob controller and the submitter reach a cluster's head through
// this proxy by path, `http://127.0.0.1:<proxy>/<namespace>/<cluster>/api/jobs/...` (the controller's
// `--rayjob-dashboard-url-template http://127.0.0.1:<proxy>/{namespace}/{cluster}`; Ray's job SDK keeps
// a path prefix in its address). Plain HTTP and WebSocket upgrades (`ray job logs --follow`) are
// forwarded; a cluster without a head here answers 503 with the reason.
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

export interface DashboardProxy {
  port: number;
  /** The URL template for the RayJob controller's flags ({namespace} and {cluster} placeholders). */
  urlTemplate: string;
  stop(): Promise<void>;
}

export interface DashboardRoute {
  port: number;
  path: string;
}

/** `/<namespace>/<cluster>/<rest>` -> the head's dashboard port and `/<rest>`; a string says why not. */
export function routeOf(url: string, dashboardPort: (namespace: string, cluster: string) => number | undefined): DashboardRoute | string {
  const m = /^\/([^/?#]+)\/([^/?#]+)(.*)$/.exec(url);
  if (!m) return `expected /<namespace>/<cluster>/..., got ${url}`;
  const [, namespace = '', cluster = '', rest = ''] = m;
  const port = dashboardPort(namespace, cluster);
  if (port === undefined) return `no Ray head of RayCluster ${namespace}/${cluster} runs in raykeeper dev`;
  return { port, path: rest === '' || rest.startsWith('?') ? `/${rest}` : rest };
}

function rawHead(req: IncomingMessage, path: string, port: number): string {
  const lines = [`${req.method ?? 'GET'} ${path} HTTP/1.1`];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!;
    lines.push(name.toLowerCase() === 'host' ? `Host: 127.0.0.1:${port}` : `${name}: ${req.rawHeaders[i + 1]}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

export async function startDashboardProxy(
  dashboardPort: (namespace: string, cluster: string) => number | undefined,
): Promise<DashboardProxy> {
  const upgraded = new Set<Duplex>();
  const server: Server = createServer((req, res) => {
    const route = routeOf(req.url ?? '/', dashboardPort);
    if (typeof route === 'string') {
      res.writeHead(503, { 'content-type': 'text/plain' }).end(`${route}\n`);
      return;
    }
    const headers = { ...req.headers, host: `127.0.0.1:${route.port}` };
    const up = request({ host: '127.0.0.1', port: route.port, method: req.method, path: route.path, headers, agent: false }, (upRes) => {
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      upRes.pipe(res);
    });
    up.on('error', (err) => {
      if (!res.headersSent)
        res.writeHead(502, { 'content-type': 'text/plain' }).end(`Ray dashboard on 127.0.0.1:${route.port}: ${err.message}\n`);
      else res.destroy();
    });
    req.pipe(up);
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const route = routeOf(req.url ?? '/', dashboardPort);
    if (typeof route === 'string') {
      socket.end(`HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${route}\n`);
      return;
    }
    const up: Socket = connect(route.port, '127.0.0.1', () => {
      up.write(rawHead(req, route.path, route.port));
      if (head.length > 0) up.write(head);
      up.pipe(socket).pipe(up);
    });
    upgraded.add(socket);
    const close = () => {
      upgraded.delete(socket);
      up.destroy();
      socket.destroy();
    };
    up.on('error', close).on('close', close);
    socket.on('error', close).on('close', close);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = address && typeof address === 'object' ? address.port : 0;
  return {
    port,
    urlTemplate: `http://127.0.0.1:${port}/{namespace}/{cluster}`,
    stop: async () => {
      for (const s of upgraded) s.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
