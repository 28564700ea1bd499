// Token auth's pure parts (src/raycluster/auth.ts) and where its env lands in our pods, as tables.
import t from 'tap';
import { authHeaders, authSecretName, buildAuthSecret, generateAuthToken, tokenOf, withTokenAuthEnv } from '../../src/raycluster/auth.ts';
import { buildHeadPod, buildWorkerPod } from '../../src/raycluster/pods.ts';
import type { WorkerGroupSpec } from '../../src/raycluster/groups.ts';
import { checkName } from '../../src/raycluster/names.ts';
import type { EnvVar } from '../../kube/model.ts';
import type { RayCluster } from '../../src/types.ts';
import { kuberaySample } from './samples.ts';

function withAuth(authOptions: Record<string, unknown> | undefined, name = 'raycluster-kuberay'): RayCluster {
  const c = kuberaySample();
  c.metadata.name = name;
  c.metadata.uid = 'uid-1';
  if (authOptions) (c.spec as Record<string, unknown>).authOptions = authOptions;
  return c;
}

const tokenRef = (name: string) => ({ name: 'RAY_AUTH_TOKEN', valueFrom: { secretKeyRef: { name, key: 'auth_token' } } });
const MODE = { name: 'RAY_AUTH_MODE', value: 'token' };

t.test("the Secret's name: secretName, else KubeRay's CheckName(cluster)", async (t) => {
  const rows: Array<[string, Record<string, unknown>, string]> = [
    ['rc', { mode: 'token' }, 'rc'],
    ['rc', { mode: 'token', secretName: 'mine' }, 'mine'],
    ['rc', { mode: 'token', secretName: '' }, 'rc'],
    ['9lives', { mode: 'token' }, 'rlives'],
    [`a${'b'.repeat(59)}`, { mode: 'token' }, 'b'.repeat(50)],
  ];
  for (const [name, auth, want] of rows) t.equal(authSecretName(withAuth(auth, name)), want, `${name} ${JSON.stringify(auth)}`);
  t.equal(checkName('-x'), 'rx');
});

t.test('the generated Secret: key auth_token, labelled, controller-owned; the token strong and fresh', async (t) => {
  const c = withAuth({ mode: 'token' }, 'rc');
  c.metadata.namespace = 'ns';
  const s = buildAuthSecret(c, 'tok');
  t.same(s, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: 'rc',
      namespace: 'ns',
      labels: { 'ray.io/cluster': 'rc' },
      ownerReferences: [
        { apiVersion: 'ray.io/v1', kind: 'RayCluster', name: 'rc', uid: 'uid-1', controller: true, blockOwnerDeletion: true },
      ],
    },
    stringData: { auth_token: 'tok' },
  });
  const a = generateAuthToken();
  t.equal(Buffer.from(a, 'base64').length, 32, '32 random bytes, base64 (KubeRay generateRandomToken(32))');
  t.not(a, generateAuthToken());
});

t.test('the token read back from a stored Secret (base64 data)', async (t) => {
  const rows: Array<[Record<string, string> | undefined, string | undefined]> = [
    [{ auth_token: Buffer.from('s3cret').toString('base64') }, 's3cret'],
    [{ auth_token: '' }, undefined],
    [{ other: 'eA==' }, undefined],
    [undefined, undefined],
  ];
  for (const [data, want] of rows) t.equal(tokenOf({ metadata: {}, data }), want, JSON.stringify(data));
  t.equal(tokenOf(undefined), undefined);
});

t.test("the env: added once, the user's own kept", async (t) => {
  const c = withAuth({ mode: 'token' }, 'rc');
  const rows: Array<[string, EnvVar[] | undefined, EnvVar[]]> = [
    ['none', undefined, [MODE, tokenRef('rc')]],
    ['others kept first', [{ name: 'A', value: '1' }], [{ name: 'A', value: '1' }, MODE, tokenRef('rc')]],
    ['user mode kept', [{ name: 'RAY_AUTH_MODE', value: 'disabled' }], [{ name: 'RAY_AUTH_MODE', value: 'disabled' }, tokenRef('rc')]],
    ['user token kept', [{ name: 'RAY_AUTH_TOKEN', value: 'x' }], [{ name: 'RAY_AUTH_TOKEN', value: 'x' }, MODE]],
  ];
  for (const [name, env, want] of rows) t.same(withTokenAuthEnv(c, env), want, name);
  t.same(withTokenAuthEnv(withAuth({ mode: 'token', secretName: 'mine' }), []), [MODE, tokenRef('mine')], 'secretName');
});

t.test("the dashboard header: KubeRay's x-ray-authorization Bearer, none without a token", async (t) => {
  t.same(authHeaders('abc'), { 'x-ray-authorization': 'Bearer abc' });
  t.same(authHeaders(undefined), {});
});

t.test('our pods: every Ray container and the wait-gcs-ready init container carry the env; no token value anywhere', async (t) => {
  const rows: Array<[string, Record<string, unknown> | undefined, string | undefined]> = [
    ['generated', { mode: 'token' }, 'raycluster-kuberay'],
    ['secretName', { mode: 'token', secretName: 'mine' }, 'mine'],
    ['disabled', { mode: 'disabled' }, undefined],
    ['absent', undefined, undefined],
  ];
  for (const [name, auth, secret] of rows) {
    const c = withAuth(auth);
    const head = buildHeadPod(c);
    const worker = buildWorkerPod(c, c.spec!.workerGroupSpecs![0] as WorkerGroupSpec);
    const containers = [head.spec!.containers[0]!, worker.spec!.containers[0]!, ...(worker.spec!.initContainers ?? [])];
    t.equal(containers.length, 3, `${name}: head, worker, wait-gcs-ready`);
    for (const x of containers) {
      const env = x.env ?? [];
      if (secret === undefined) {
        t.notOk(
          env.some((e) => e.name.startsWith('RAY_AUTH_')),
          `${name}: ${x.name} has no auth env`,
        );
        continue;
      }
      t.match(
        env.find((e) => e.name === 'RAY_AUTH_MODE'),
        MODE,
        `${name}: ${x.name} RAY_AUTH_MODE`,
      );
      t.same(
        env.find((e) => e.name === 'RAY_AUTH_TOKEN'),
        tokenRef(secret),
        `${name}: ${x.name} RAY_AUTH_TOKEN by secretKeyRef only`,
      );
    }
    // KubeRay's order in the init container: the template's env, the auth env, then FQ_RAY_IP / RAY_IP.
    if (secret !== undefined)
      t.same(
        (worker.spec!.initContainers![0]!.env ?? []).map((e) => e.name).slice(-4),
        ['RAY_AUTH_MODE', 'RAY_AUTH_TOKEN', 'FQ_RAY_IP', 'RAY_IP'],
        `${name}: init env order`,
      );
  }
});
