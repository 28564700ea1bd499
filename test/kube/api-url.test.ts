// Where a request goes: the API server's URL may carry a path prefix (a proxy such as Rancher's
// https://rancher.example/k8s/clusters/c-1); requests and watches must keep it.
import t from 'tap';
import { apiUrl } from '../../kube/client.ts';

const rows: Array<[server: string, path: string, want: string]> = [
  ['https://10.0.0.1:6443', '/api/v1/pods', 'https://10.0.0.1:6443/api/v1/pods'],
  ['https://10.0.0.1:6443/', '/api/v1/pods', 'https://10.0.0.1:6443/api/v1/pods'],
  [
    'https://rancher.example/k8s/clusters/c-1',
    '/apis/ray.io/v1/rayclusters',
    'https://rancher.example/k8s/clusters/c-1/apis/ray.io/v1/rayclusters',
  ],
  [
    'https://rancher.example/k8s/clusters/c-1/',
    '/api/v1/namespaces/a/pods',
    'https://rancher.example/k8s/clusters/c-1/api/v1/namespaces/a/pods',
  ],
  [
    'https://[::1]:6443/prefix',
    '/api/v1/pods?watch=true&labelSelector=a%3Db',
    'https://[::1]:6443/prefix/api/v1/pods?watch=true&labelSelector=a%3Db',
  ],
  ['http://127.0.0.1:8080', '/version', 'http://127.0.0.1:8080/version'],
];

for (const [server, path, want] of rows) {
  t.equal(apiUrl(new URL(server), path).href, want, `${server} + ${path}`);
}

t.test('the server URL is not changed', async (t) => {
  const server = new URL('https://rancher.example/k8s/clusters/c-1');
  apiUrl(server, '/api/v1/pods?limit=1');
  t.equal(server.href, 'https://rancher.example/k8s/clusters/c-1');
});
