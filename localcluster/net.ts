// Loopback ports and a minimal HTTPS GET for readiness polling (before a kubeconfig exists).
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';

/** A port free on host (default 127.0.0.1) right now (the kernel picks it). Racy by nature: callers retry on EADDRINUSE. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port'));
      });
    });
  });
}

export interface GetResult {
  status: number;
  body: string;
}

/** GET a URL (http or https), with an optional CA and bearer token. Rejects on network errors. */
export function get(url: string, options: { ca?: string; token?: string; timeoutMs?: number } = {}): Promise<GetResult> {
  const u = new URL(url);
  const request = u.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      u,
      {
        method: 'GET',
        ca: options.ca,
        headers: options.token ? { authorization: `Bearer ${options.token}` } : {},
        timeout: options.timeoutMs ?? 5000,
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });
}
