// SlimKubeConfig (kube/kubeconfig.ts) against client-node's own KubeConfig: for each kubeconfig in the
// table, both load it and must agree on the current cluster and user and on what applyToHTTPSOptions
// writes (auth headers, CA, client certificate and key, TLS verification, server name).
import t from 'tap';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig, SlimKubeConfig, type HttpsOptions } from '../../kube/kubeconfig.ts';

const dir = mkdtempSync(join(tmpdir(), 'raykeeper-kubeconfig-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const b64 = (s: string) => Buffer.from(s).toString('base64');
writeFileSync(join(dir, 'ca.crt'), 'CA FROM FILE');
writeFileSync(join(dir, 'client.crt'), 'CERT FROM FILE');
writeFileSync(join(dir, 'client.key'), 'KEY FROM FILE');
const execScript = join(dir, 'exec-credential.sh');
writeFileSync(
  execScript,
  `#!/bin/sh\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"token-from-exec"}}'\n`,
);
chmodSync(execScript, 0o755);

function doc(
  cluster: Record<string, unknown>,
  user: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'c', cluster: { server: 'https://10.0.0.1:6443', ...cluster } },
      { name: 'other', cluster: { server: 'https://other:6443' } },
    ],
    users: [
      { name: 'u', user },
      { name: 'nobody', user: { token: 'not-this-one' } },
    ],
    contexts: [
      { name: 'ctx', context: { cluster: 'c', user: 'u', namespace: 'ns1' } },
      { name: 'other', context: { cluster: 'other', user: 'nobody' } },
    ],
    'current-context': 'ctx',
    ...extra,
  };
}

const CASES: Array<{ name: string; config: Record<string, unknown> }> = [
  { name: 'token and inline CA', config: doc({ 'certificate-authority-data': b64('INLINE CA') }, { token: 'abc' }) },
  {
    name: 'client certificate inline, TLS server name',
    config: doc(
      { 'certificate-authority-data': b64('CA'), 'tls-server-name': 'kubernetes' },
      { 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') },
    ),
  },
  {
    name: 'files relative to the kubeconfig',
    config: doc({ 'certificate-authority': 'ca.crt' }, { 'client-certificate': 'client.crt', 'client-key': './client.key' }),
  },
  { name: 'insecure-skip-tls-verify', config: doc({ 'insecure-skip-tls-verify': true }, { token: 'x' }) },
  { name: 'basic auth and impersonation', config: doc({}, { username: 'admin', password: 'secret', as: 'someone' }) },
  {
    name: 'exec credential plugin',
    config: doc({}, { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: execScript, interactiveMode: 'Never' } }),
  },
  {
    name: 'token file auth provider',
    config: doc({}, { 'auth-provider': { name: 'tokenFile', config: { tokenFile: join(dir, 'ca.crt') } } }),
  },
  { name: 'another current context', config: doc({}, { token: 'abc' }, { 'current-context': 'other' }) },
];

async function httpsOptions(kc: { applyToHTTPSOptions(o: HttpsOptions): Promise<void> }): Promise<Record<string, unknown>> {
  const opts: HttpsOptions = { headers: {} };
  await kc.applyToHTTPSOptions(opts);
  return {
    headers: opts.headers,
    ca: opts.ca?.toString(),
    cert: opts.cert?.toString(),
    key: opts.key?.toString(),
    rejectUnauthorized: opts.rejectUnauthorized,
    servername: opts.servername,
    auth: opts.auth,
  };
}

for (const [i, c] of CASES.entries()) {
  t.test(c.name, async (t) => {
    const file = join(dir, `config-${i}.yaml`);
    writeFileSync(file, stringify(c.config));
    const theirs = new KubeConfig();
    theirs.loadFromFile(file);
    const ours = loadKubeConfig(file);
    t.same(ours.getCurrentCluster(), theirs.getCurrentCluster(), 'current cluster');
    t.same(ours.getCurrentUser(), theirs.getCurrentUser(), 'current user');
    t.same(await httpsOptions(ours), await httpsOptions(theirs), 'what a request carries');
  });
}

t.test('loadFromDefault: KUBECONFIG files merged like client-node, then ~/.kube/config', async (t) => {
  const a = join(dir, 'a.yaml');
  const b = join(dir, 'b.yaml');
  writeFileSync(a, stringify(doc({}, { token: 'from-a' })));
  writeFileSync(
    b,
    stringify({
      clusters: [{ name: 'b', cluster: { server: 'https://b:6443' } }],
      users: [{ name: 'ub', user: { token: 'from-b' } }],
      contexts: [{ name: 'cb', context: { cluster: 'b', user: 'ub' } }],
      'current-context': 'cb',
    }),
  );
  const saved = process.env.KUBECONFIG;
  t.teardown(() => {
    if (saved === undefined) delete process.env.KUBECONFIG;
    else process.env.KUBECONFIG = saved;
  });
  process.env.KUBECONFIG = `${a}:${b}`;
  const theirs = new KubeConfig();
  theirs.loadFromDefault();
  const ours = new SlimKubeConfig();
  ours.loadFromDefault({ KUBECONFIG: `${a}:${b}` });
  t.equal(ours.getCurrentCluster()?.server, 'https://b:6443');
  t.same(ours.getCurrentCluster(), theirs.getCurrentCluster());
  t.same(await httpsOptions(ours), await httpsOptions(theirs));
  const dup = new SlimKubeConfig();
  t.throws(() => dup.loadFromDefault({ KUBECONFIG: `${a}:${a}` }), /Duplicate cluster: c/, 'a name twice is an error');

  const home = join(dir, 'home');
  mkdirSync(join(home, '.kube'), { recursive: true });
  writeFileSync(join(home, '.kube', 'config'), stringify(doc({}, { token: 'from-home' })));
  const fromHome = new SlimKubeConfig();
  fromHome.loadFromDefault({ HOME: home });
  t.same((await httpsOptions(fromHome)).headers, { Authorization: 'Bearer from-home' });
});

t.test('in-cluster: the service account token (re-read), CA and namespace, like client-node', async (t) => {
  const prefix = join(dir, 'pod');
  const sa = join(prefix, 'var/run/secrets/kubernetes.io/serviceaccount');
  mkdirSync(sa, { recursive: true });
  writeFileSync(join(sa, 'token'), 'sa-token');
  writeFileSync(join(sa, 'ca.crt'), 'SA CA');
  writeFileSync(join(sa, 'namespace'), 'raykeeper-system');
  const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
  t.teardown(() => {
    for (const [k, v] of [
      ['KUBERNETES_SERVICE_HOST', saved.host],
      ['KUBERNETES_SERVICE_PORT', saved.port],
    ] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
  process.env.KUBERNETES_SERVICE_HOST = 'fd00::1';
  process.env.KUBERNETES_SERVICE_PORT = '443';
  const theirs = new KubeConfig();
  theirs.loadFromCluster(prefix);
  const ours = new SlimKubeConfig();
  ours.loadFromDefault({ HOME: join(dir, 'no-home') }, prefix);
  t.equal(ours.getCurrentCluster()?.server, 'https://[fd00::1]:443');
  t.same(ours.getCurrentCluster(), theirs.getCurrentCluster());
  t.same(ours.getContextObject(ours.getCurrentContext()), theirs.getContextObject(theirs.getCurrentContext()), 'namespace from the pod');
  t.same(await httpsOptions(ours), await httpsOptions(theirs));
  t.same((await httpsOptions(ours)).headers, { Authorization: 'Bearer sa-token' });

  // The kubelet rotates the projected token: client-node's FileAuth re-reads the file once its copy is
  // older than 60 s (as client-go does). `new Date()` is what it reads the time from: move it on.
  writeFileSync(join(sa, 'token'), 'sa-token-rotated');
  t.same((await httpsOptions(ours)).headers, { Authorization: 'Bearer sa-token' }, 'within 60 s of the last read: the copy read then');
  const RealDate = Date;
  let aheadMs = 0;
  globalThis.Date = class extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(RealDate.now() + aheadMs);
      else super(...(args as [string]));
    }
    static override now(): number {
      return RealDate.now() + aheadMs;
    }
  } as DateConstructor;
  t.teardown(() => {
    globalThis.Date = RealDate;
  });
  aheadMs = 61_000;
  t.same(
    (await httpsOptions(ours)).headers,
    { Authorization: 'Bearer sa-token-rotated' },
    'after 60 s: the rotated token is re-read and sent',
  );
});

t.test('no cluster at all: a clear error', async (t) => {
  const file = join(dir, 'empty.yaml');
  writeFileSync(file, 'apiVersion: v1\nkind: Config\n');
  t.throws(() => loadKubeConfig(file), /no Kubernetes cluster configured/);
});
