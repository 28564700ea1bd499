import t from 'tap';
import { asJobInNamespace, fileSource, planContainer, planInProcessCleanup } from '../../src/gcsft/inprocess.ts';
import { resolveEnv } from '../../kube/env.ts';
import { cluster } from './fixtures.ts';

t.test('plain values and secretKeyRefs are planned; fieldRefs are unresolvable', async (tt) => {
  const c = cluster({
    env: [
      { name: 'RAY_REDIS_ADDRESS', value: 'redis:6379' },
      { name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'auth', key: 'pw' } } },
      { name: 'REDIS_USERNAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ],
  });
  const plan = planInProcessCleanup(c);
  tt.same(plan.env.RAY_REDIS_ADDRESS, { kind: 'value', value: 'redis:6379' });
  tt.same(plan.env.REDIS_PASSWORD, { kind: 'secretKey', name: 'auth', key: 'pw', optional: false });
  tt.same(plan.env.RAY_external_storage_namespace, { kind: 'value', value: '0b7c1a52-5f7e-4b8e-9a43-2d1f0c2e9f10' });
  tt.equal(plan.unresolvable.length, 1);
  tt.match(plan.unresolvable[0], /REDIS_USERNAME/);
});

t.test('TLS files map to the Secret key behind the volume (items, subPath)', async (tt) => {
  const c = cluster({
    env: [
      { name: 'RAY_REDIS_ADDRESS', value: 'rediss://redis:6380' },
      { name: 'RAY_REDIS_CA_CERT', value: '/tls/ca/ca.crt' },
      { name: 'RAY_REDIS_CLIENT_CERT', value: '/tls/client.crt' },
      { name: 'RAY_REDIS_CLIENT_KEY', value: '/elsewhere/key.pem' },
    ],
  });
  const spec = c.spec!.headGroupSpec!.template!.spec!;
  spec.containers![0]!.volumeMounts = [
    { name: 'ca', mountPath: '/tls/ca' },
    { name: 'client', mountPath: '/tls/client.crt', subPath: 'crt' },
    { name: 'scratch', mountPath: '/elsewhere' },
  ];
  spec.volumes = [
    { name: 'ca', secret: { secretName: 'redis-ca', items: [{ key: 'ca-bundle', path: 'ca.crt' }] } },
    { name: 'client', configMap: { name: 'client-cm' } },
    { name: 'scratch', emptyDir: {} },
  ];
  tt.same(fileSource(c, '/tls/ca/ca.crt'), { kind: 'file', from: 'secret', name: 'redis-ca', key: 'ca-bundle', optional: false });
  tt.same(fileSource(c, '/tls/client.crt'), { kind: 'file', from: 'configMap', name: 'client-cm', key: 'crt', optional: false });
  tt.equal(fileSource(c, '/elsewhere/key.pem'), undefined, 'emptyDir: nothing the controller can read');
  tt.equal(fileSource(c, '/tls/ca/other.crt'), undefined, 'not among the items');
  const plan = planInProcessCleanup(c);
  tt.equal(plan.env.RAY_REDIS_CA_CERT?.kind, 'file');
  tt.match(plan.unresolvable.join(';'), /RAY_REDIS_CLIENT_KEY/);
});

t.test('envFrom sources are listed; explicit env wins when merged', async (tt) => {
  const c = cluster();
  c.spec!.headGroupSpec!.template!.spec!.containers![0]!.envFrom = [
    { secretRef: { name: 'redis-env' } },
    { prefix: 'X_', configMapRef: { name: 'cm', optional: true } },
  ];
  const plan = planInProcessCleanup(c);
  tt.same(plan.envFrom, [
    { kind: 'secret', name: 'redis-env', prefix: '', optional: false },
    { kind: 'configMap', name: 'cm', prefix: 'X_', optional: true },
  ]);
  // Resolved as the kubelet does (kube/env.ts): envFrom in order, explicit env over them.
  const merged = await resolveEnv(
    planContainer({ env: { A: { kind: 'value', value: 'explicit' } }, envFrom: plan.envFrom, unresolvable: [] }),
    { name: 'c', namespace: 'ns', uid: '', labels: {}, annotations: {}, serviceAccountName: '' },
    {
      secret: async () => ({ A: '1', B: '1' }),
      configMap: async () => ({ B: '2' }),
    },
  );
  tt.same(merged, { A: 'explicit', B: '1', X_B: '2' });
});

t.test('the plan as a container: files become the Secret / ConfigMap key behind them, resolved to their content', async (tt) => {
  const container = planContainer({
    env: {
      RAY_REDIS_ADDRESS: { kind: 'value', value: 'rediss://redis:6379' },
      REDIS_PASSWORD: { kind: 'secretKey', name: 'auth', key: 'pw', optional: false },
      RAY_REDIS_CA_CERT: { kind: 'file', from: 'secret', name: 'redis-ca', key: 'ca.crt', optional: false },
      RAY_REDIS_CLIENT_CERT: { kind: 'file', from: 'configMap', name: 'client-cm', key: 'crt', optional: true },
    },
    envFrom: [],
    unresolvable: [],
  });
  tt.same(container.env, [
    { name: 'RAY_REDIS_ADDRESS', value: 'rediss://redis:6379' },
    { name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'auth', key: 'pw', optional: false } } },
    { name: 'RAY_REDIS_CA_CERT', valueFrom: { secretKeyRef: { name: 'redis-ca', key: 'ca.crt', optional: false } } },
    { name: 'RAY_REDIS_CLIENT_CERT', valueFrom: { configMapKeyRef: { name: 'client-cm', key: 'crt', optional: true } } },
  ]);
  const secrets: Record<string, Record<string, string>> = {
    auth: { pw: 's3cret' },
    'redis-ca': { 'ca.crt': '-----BEGIN CERTIFICATE-----' },
  };
  const env = await resolveEnv(
    container,
    { name: 'c', namespace: 'ns', uid: '', labels: {}, annotations: {}, serviceAccountName: '' },
    { secret: async (_ns, name) => secrets[name], configMap: async () => undefined },
  );
  tt.same(env, { RAY_REDIS_ADDRESS: 'rediss://redis:6379', REDIS_PASSWORD: 's3cret', RAY_REDIS_CA_CERT: '-----BEGIN CERTIFICATE-----' });
});

t.test("asJobInNamespace: the address as the Job's pod in the cluster's namespace resolves it (issue 47)", async (tt) => {
  const rows: Array<[Record<string, string>, Record<string, string>, string]> = [
    [{ RAY_REDIS_ADDRESS: 'redis' }, { RAY_REDIS_ADDRESS: 'redis.team-a' }, 'a one-label name is a Service of the cluster namespace'],
    [{ RAY_REDIS_ADDRESS: 'redis:6380' }, { RAY_REDIS_ADDRESS: 'redis.team-a:6380' }, 'with its port'],
    [{ RAY_REDIS_ADDRESS: 'redis.shared:1' }, { RAY_REDIS_ADDRESS: 'redis.shared:1' }, 'x.y: resolves alike from every namespace'],
    [
      { RAY_REDIS_ADDRESS: 'redis.corp:6379' },
      { RAY_REDIS_ADDRESS: 'redis.corp:6379' },
      'maybe an external name: kept (x.y.svc would not resolve)',
    ],
    [
      { RAY_REDIS_ADDRESS: 'redis.shared.svc.cluster.local:1' },
      { RAY_REDIS_ADDRESS: 'redis.shared.svc.cluster.local:1' },
      'already qualified',
    ],
    [{ RAY_REDIS_ADDRESS: '10.0.0.5:6379' }, { RAY_REDIS_ADDRESS: '10.0.0.5:6379' }, 'an IP'],
    [
      { RAY_REDIS_ADDRESS: 'redis://u:p%40w@redis:1', REDIS_PASSWORD: 'x' },
      { RAY_REDIS_ADDRESS: 'redis://u:p%40w@redis.team-a:1', REDIS_PASSWORD: 'x' },
      'user information kept as written',
    ],
    [
      { RAY_REDIS_ADDRESS: 'rediss://redis:6380' },
      { RAY_REDIS_ADDRESS: 'rediss://redis.team-a:6380', RAY_REDIS_SERVER_NAME: 'redis' },
      'TLS: the certificate is checked against the name as written, as the Job checks it',
    ],
    [
      { RAY_REDIS_ADDRESS: 'rediss://redis:6380', RAY_REDIS_SERVER_NAME: 'redis.example' },
      { RAY_REDIS_ADDRESS: 'rediss://redis.team-a:6380', RAY_REDIS_SERVER_NAME: 'redis.example' },
      "the head's own server name stays",
    ],
    [{ RAY_REDIS_ADDRESS: 'http://r:1' }, { RAY_REDIS_ADDRESS: 'http://r:1' }, 'unparsable: left for the cleanup to report'],
    [{ REDIS_PASSWORD: 'x' }, { REDIS_PASSWORD: 'x' }, 'no address'],
  ];
  for (const [env, want, why] of rows) tt.same(asJobInNamespace(env, 'team-a'), want, why);
});
