// In-tree autoscaling in the pod builders and the autoscaler's RBAC (src/raycluster/autoscaler.ts),
// against KubeRay v1.6.2's own cases (common/pod_test.go TestBuildPod_WithAutoscalerEnabled,
// TestBuildPodWithAutoscalerOptions, TestDefaultHeadPodTemplate_Autoscaling, ..., common/rbac_test.go).
import t from 'tap';
import { AUTOSCALER_ROLE_RULES, autoscalerRbac, headServiceAccountName, userServiceAccount } from '../../src/raycluster/autoscaler.ts';
import { buildHeadPod, buildWorkerPod, rayEnv } from '../../src/raycluster/pods.ts';
import { workerGroups } from '../../src/raycluster/groups.ts';
import { checkName, ownerReference } from '../../src/raycluster/names.ts';
import type { Container, Pod } from '../../kube/model.ts';
import type { RayCluster } from '../../src/types.ts';
import { kuberayPodTestInstance } from './samples.ts';

/** KubeRay's pod_test.go `instance` with `spec` merged in and the head's serviceAccountName. */
function instance(spec: Record<string, unknown> = {}, headSa?: string): RayCluster {
  const c = kuberayPodTestInstance();
  Object.assign(c.spec!, spec);
  if (headSa !== undefined) (c.spec!.headGroupSpec!.template!.spec as Record<string, unknown>).serviceAccountName = headSa;
  return c;
}

const fieldRef = (name: string, fieldPath: string) => ({ name, valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } } });

/** pod_test.go's autoscalerContainer (with the shared log mount BuildPod adds). */
const KUBERAY_AUTOSCALER: Container = {
  name: 'autoscaler',
  image: 'repo/image:custom',
  imagePullPolicy: 'IfNotPresent',
  env: [
    fieldRef('RAY_CLUSTER_NAME', "metadata.labels['ray.io/cluster']"),
    fieldRef('RAY_CLUSTER_NAMESPACE', 'metadata.namespace'),
    fieldRef('RAY_HEAD_POD_NAME', 'metadata.name'),
    { name: 'KUBERAY_CRD_VER', value: 'v1' },
  ],
  command: ['/bin/bash', '-c', '--'],
  args: ['ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)'],
  resources: { limits: { cpu: '500m', memory: '512Mi' }, requests: { cpu: '500m', memory: '512Mi' } },
  volumeMounts: [{ name: 'ray-logs', mountPath: '/tmp/ray', readOnly: false }],
};

const autoscaler = (p: Pod) => p.spec!.containers.find((c) => c.name === 'autoscaler');

t.test('TestBuildPod_WithAutoscalerEnabled: the container, no-monitor, ServiceAccount, shared log volume', async (t) => {
  const head = buildHeadPod(instance({ enableInTreeAutoscaling: true }));
  t.equal(head.spec!.containers.length, 2);
  t.same(autoscaler(head), KUBERAY_AUTOSCALER);
  t.match(head.spec!.containers[0]!.args![0], / --no-monitor /);
  t.equal(head.spec!.serviceAccountName, 'raycluster-sample');
  t.same(head.spec!.volumes, [
    { name: 'shared-mem', emptyDir: { medium: 'Memory', sizeLimit: '1Gi' } },
    { name: 'ray-logs', emptyDir: {} },
  ]);
  t.same(head.spec!.containers[0]!.volumeMounts, [
    { name: 'shared-mem', mountPath: '/dev/shm', readOnly: false },
    { name: 'ray-logs', mountPath: '/tmp/ray', readOnly: false },
  ]);
  t.equal(head.spec!.restartPolicy, undefined, 'v1: restartPolicy as the template says');
  t.notOk(rayEnv(head).has('RAY_enable_autoscaler_v2'));
  // The env the autoscaler v2 reads to match Ray nodes to pods and groups (on every Ray container anyway).
  t.match(rayEnv(head).get('RAY_CLOUD_INSTANCE_ID'), { valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } });
  t.match(rayEnv(head).get('RAY_NODE_TYPE_NAME'), { valueFrom: { fieldRef: { fieldPath: "metadata.labels['ray.io/group']" } } });
});

t.test('TestDefaultHeadPodTemplate_Autoscaling / TestDefaultWorkerPodTemplate_Autoscaling: off, v1, v2', async (t) => {
  const rows: Array<[string, Record<string, unknown>, { containers: number; v2Env: boolean; restart: string | undefined }]> = [
    ['off', {}, { containers: 1, v2Env: false, restart: undefined }],
    ['v1 (no version)', { enableInTreeAutoscaling: true }, { containers: 2, v2Env: false, restart: undefined }],
    ['v1', { enableInTreeAutoscaling: true, autoscalerOptions: { version: 'v1' } }, { containers: 2, v2Env: false, restart: undefined }],
    ['v2', { enableInTreeAutoscaling: true, autoscalerOptions: { version: 'v2' } }, { containers: 2, v2Env: true, restart: 'Never' }],
    [
      'v2 options without enableInTreeAutoscaling',
      { autoscalerOptions: { version: 'v2' } },
      { containers: 1, v2Env: false, restart: undefined },
    ],
  ];
  for (const [name, spec, want] of rows) {
    const c = instance(spec);
    const head = buildHeadPod(c);
    const worker = buildWorkerPod(c, workerGroups(c)[0]!);
    t.equal(head.spec!.containers.length, want.containers, `${name}: head containers`);
    t.equal(rayEnv(head).get('RAY_enable_autoscaler_v2')?.value, want.v2Env ? 'true' : undefined, `${name}: RAY_enable_autoscaler_v2`);
    t.equal(head.spec!.restartPolicy, want.restart, `${name}: head restartPolicy`);
    t.equal(worker.spec!.restartPolicy, want.restart, `${name}: worker restartPolicy`);
    t.equal(worker.spec!.containers.length, 1, `${name}: no autoscaler on workers`);
    t.equal(worker.spec!.serviceAccountName, undefined, `${name}: workers keep their ServiceAccount`);
  }
  // v2: the env comes after the template's own and before what KubeRay adds for every Ray container.
  const names = [...rayEnv(buildHeadPod(instance({ enableInTreeAutoscaling: true, autoscalerOptions: { version: 'v2' } }))).keys()];
  t.same(names.slice(0, 3), ['TEST_ENV_NAME', 'RAY_enable_autoscaler_v2', 'RAY_CLUSTER_NAME']);
});

t.test('TestBuildPodWithAutoscalerOptions: image, pull policy, resources, env, envFrom, mounts, securityContext', async (t) => {
  const securityContext = {
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    runAsNonRoot: true,
    seccompProfile: { type: 'RuntimeDefault' },
  };
  const resources = { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } };
  const mounts = [
    { name: 'ca-tls', mountPath: '/etc/ca/tls', readOnly: true },
    { name: 'ray-tls', mountPath: '/etc/ray/tls' },
  ];
  const head = buildHeadPod(
    instance({
      enableInTreeAutoscaling: true,
      autoscalerOptions: {
        upscalingMode: 'Aggressive',
        idleTimeoutSeconds: 100,
        image: 'custom-autoscaler-xxx',
        imagePullPolicy: 'Always',
        resources,
        env: [{ name: 'fooEnv', value: 'fooValue' }],
        envFrom: [{ prefix: 'Pre' }],
        volumeMounts: mounts,
        securityContext,
      },
    }),
  );
  t.same(autoscaler(head), {
    ...KUBERAY_AUTOSCALER,
    image: 'custom-autoscaler-xxx',
    imagePullPolicy: 'Always',
    resources,
    env: [...KUBERAY_AUTOSCALER.env!, { name: 'fooEnv', value: 'fooValue' }],
    envFrom: [{ prefix: 'Pre' }],
    volumeMounts: [...mounts, ...KUBERAY_AUTOSCALER.volumeMounts!],
    securityContext,
  });
});

t.test('token auth: the autoscaler container gets RAY_AUTH_MODE and RAY_AUTH_TOKEN before the user env, as KubeRay', async (t) => {
  const head = buildHeadPod(
    instance({
      enableInTreeAutoscaling: true,
      authOptions: { mode: 'token' },
      autoscalerOptions: { env: [{ name: 'fooEnv', value: 'fooValue' }] },
    }),
  );
  t.same(autoscaler(head)!.env, [
    ...KUBERAY_AUTOSCALER.env!,
    { name: 'RAY_AUTH_MODE', value: 'token' },
    { name: 'RAY_AUTH_TOKEN', valueFrom: { secretKeyRef: { name: 'raycluster-sample', key: 'auth_token' } } },
    { name: 'fooEnv', value: 'fooValue' },
  ]);
});

t.test('shared log volume: a /tmp/ray the template already mounts is kept', async (t) => {
  const c = instance({ enableInTreeAutoscaling: true });
  const spec = (c.spec!.headGroupSpec as { template: { spec: { containers: Container[]; volumes?: unknown[] } } }).template.spec;
  spec.containers[0]!.volumeMounts = [{ name: 'my-logs', mountPath: '/tmp/ray' }];
  spec.volumes = [{ name: 'my-logs', hostPath: { path: '/var/log/ray' } }];
  const head = buildHeadPod(c);
  t.same(
    head.spec!.containers[0]!.volumeMounts?.filter((m) => m.mountPath === '/tmp/ray'),
    [{ name: 'my-logs', mountPath: '/tmp/ray' }],
  );
  // KubeRay mounts its own ray-logs in the autoscaler then (addEmptyDir per container).
  t.same(autoscaler(head)!.volumeMounts, [{ name: 'ray-logs', mountPath: '/tmp/ray', readOnly: false }]);
  t.same(
    head.spec!.volumes!.map((v) => v.name),
    ['my-logs', 'shared-mem', 'ray-logs'],
  );
});

t.test('ServiceAccount: the cluster name, or the one the head template names (TestHeadPodTemplate_WithServiceAccount)', async (t) => {
  const rows: Array<[string, RayCluster, { pod: string | undefined; user: boolean }]> = [
    ['no autoscaling, none', instance(), { pod: undefined, user: false }],
    ['no autoscaling, given', instance({}, 'head-service-account'), { pod: 'head-service-account', user: true }],
    ['autoscaling, none', instance({ enableInTreeAutoscaling: true }), { pod: 'raycluster-sample', user: false }],
    [
      'autoscaling, given',
      instance({ enableInTreeAutoscaling: true }, 'head-service-account'),
      { pod: 'head-service-account', user: true },
    ],
  ];
  for (const [name, c, want] of rows) {
    t.equal(buildHeadPod(c).spec!.serviceAccountName, want.pod, `${name}: pod`);
    t.equal(userServiceAccount(c), want.user, `${name}: user-given`);
  }
  const long = instance({ enableInTreeAutoscaling: true });
  long.metadata.name = `a${'b'.repeat(59)}`;
  t.equal(headServiceAccountName(long), long.metadata.name);
  t.equal(buildHeadPod(long).spec!.serviceAccountName, 'b'.repeat(50), 'clipped as CheckName does');
});

t.test('CheckName', async (t) => {
  const rows: Array<[string, string]> = [
    ['raycluster', 'raycluster'],
    ['1abc', 'rabc'],
    ['-abc', 'rabc'],
    ['x'.repeat(10) + 'y'.repeat(50), 'y'.repeat(50)],
    ['x'.repeat(9) + '7' + 'y'.repeat(50), 'y'.repeat(50)],
    ['x'.repeat(10) + '7' + 'y'.repeat(49), `r${'y'.repeat(49)}`],
  ];
  for (const [input, want] of rows) t.equal(checkName(input), want, input);
});

t.test('rbac.go: ServiceAccount, Role, RoleBinding; KubeRay names, labels and rules; owned by the cluster', async (t) => {
  const c = instance({ enableInTreeAutoscaling: true });
  const owner = ownerReference(c);
  const objs = autoscalerRbac(c, owner);
  const labels = {
    'ray.io/cluster': 'raycluster-sample',
    'app.kubernetes.io/name': 'kuberay',
    'app.kubernetes.io/created-by': 'raykeeper',
  };
  const meta = { name: 'raycluster-sample', namespace: 'default', labels, ownerReferences: [owner] };
  t.same(objs, [
    { kind: 'ServiceAccount', lookupName: 'raycluster-sample', body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta } },
    {
      kind: 'Role',
      lookupName: 'raycluster-sample',
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: meta,
        rules: [
          { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'patch'] },
          { apiGroups: [''], resources: ['pods/resize'], verbs: ['patch'] },
          { apiGroups: ['ray.io'], resources: ['rayclusters'], verbs: ['get', 'patch'] },
        ],
      },
    },
    {
      kind: 'RoleBinding',
      lookupName: 'raycluster-sample',
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: meta,
        subjects: [{ kind: 'ServiceAccount', name: 'raycluster-sample', namespace: 'default' }],
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'raycluster-sample' },
      },
    },
  ]);
  t.equal(owner.controller, true);
  t.same(AUTOSCALER_ROLE_RULES, (objs[1]!.body as { rules: unknown }).rules);
  // A user-given ServiceAccount: looked up by that name, and bound.
  const given = autoscalerRbac(instance({ enableInTreeAutoscaling: true }, 'my-sa'), owner);
  t.equal(given[0]!.lookupName, 'my-sa');
  t.match(given[2]!.body, { subjects: [{ name: 'my-sa' }], roleRef: { name: 'raycluster-sample' } });
  t.same(autoscalerRbac(instance(), owner), [], 'nothing without enableInTreeAutoscaling');
});
