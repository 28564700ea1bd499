// In-tree autoscaling with our RayCluster operator on the real kube-apiserver: the autoscaler's
// ServiceAccount / Role / RoleBinding (KubeRay's names and rules, owned by the cluster), a user-named
// ServiceAccount (never created, as KubeRay), and the autoscaler's write pattern played against the
// operator: replicas up; workersToDelete listed + replicas down, with another writer's update landing
// between the operator's read and its status write. Nothing runs pods here: the test plays the kubelet.
import t, { type Test } from 'tap';
import { startController } from '../../controller/main.ts';
import { rayClusterOperatorModule } from '../../controller/raycluster/module.ts';
import { isConflict, type KubeClient, type ResourceRef } from '../../kube/client.ts';
import type { Pod } from '../../kube/model.ts';
import { PODS, ROLEBINDINGS, ROLES, SERVICEACCOUNTS } from '../../kube/resources.ts';
import { AUTOSCALER_ROLE_RULES } from '../../src/raycluster/autoscaler.ts';
import { RAYCLUSTERS, type RayCluster } from '../../src/types.ts';
import type { WorkerGroupSpec } from '../../src/raycluster/groups.ts';
import { env, events, getCluster, quiet, until, type Env } from '../helpers/harness.ts';
import { kuberaySample } from './samples.ts';

async function operator(tt: Test, e: Env) {
  const c = await startController({
    kubeConfig: e.ns.kubeConfig,
    watchNamespace: e.ns.name,
    workers: 2,
    modules: [rayClusterOperatorModule],
    env: {},
    logger: quiet,
    retry: { baseMs: 100, maxMs: 1000, jitter: 0.2 },
  });
  tt.teardown(() => c.stop());
  return c;
}

function autoscaling(name: string, group: { replicas: number; minReplicas: number; maxReplicas: number }, headSa?: string): RayCluster {
  const c = kuberaySample();
  c.metadata.name = name;
  c.spec!.enableInTreeAutoscaling = true;
  Object.assign(c.spec!.workerGroupSpecs![0]!, group);
  if (headSa) (c.spec!.headGroupSpec as { template: { spec: Record<string, unknown> } }).template.spec.serviceAccountName = headSa;
  return c;
}

const pods = async (e: Env, selector: string): Promise<Pod[]> =>
  (await e.kube.list({ ...PODS, namespace: e.ns.name }, { labelSelector: selector })).items;
const workers = async (e: Env, cluster: string) =>
  (await pods(e, `ray.io/cluster=${cluster},ray.io/node-type=worker`)).map((p) => p.metadata.name!).sort();
const found = <K>(e: Env, ref: ResourceRef<K>, name: string) => e.kube.get({ ...ref, namespace: e.ns.name, name }).catch(() => undefined);

t.test(
  "an autoscaling cluster: KubeRay's ServiceAccount, Role and RoleBinding, owned; the head runs the autoscaler under it",
  async (tt) => {
    const e = await env(tt);
    await operator(tt, e);
    const created = await e.kube.create(
      { ...RAYCLUSTERS, namespace: e.ns.name },
      autoscaling('scaler', { replicas: 1, minReplicas: 0, maxReplicas: 5 }),
    );
    const owner = [
      {
        apiVersion: 'ray.io/v1',
        kind: 'RayCluster',
        name: 'scaler',
        uid: created.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ];
    const labels = { 'ray.io/cluster': 'scaler', 'app.kubernetes.io/name': 'kuberay', 'app.kubernetes.io/created-by': 'raykeeper' };
    const sa = await until(() => found(e, SERVICEACCOUNTS, 'scaler'), 'the ServiceAccount');
    tt.same(sa.metadata.ownerReferences, owner, 'ServiceAccount owned by the cluster (controller)');
    tt.match(sa.metadata.labels, labels);
    const role = await until(() => found(e, ROLES, 'scaler'), 'the Role');
    tt.same(role.metadata.ownerReferences, owner, 'Role owned');
    tt.same(role.rules, AUTOSCALER_ROLE_RULES, "KubeRay's rules");
    tt.same(role.rules, [
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'patch'] },
      { apiGroups: [''], resources: ['pods/resize'], verbs: ['patch'] },
      { apiGroups: ['ray.io'], resources: ['rayclusters'], verbs: ['get', 'patch'] },
    ]);
    const binding = await until(() => found(e, ROLEBINDINGS, 'scaler'), 'the RoleBinding');
    tt.same(binding.metadata.ownerReferences, owner, 'RoleBinding owned');
    tt.same(binding.subjects, [{ kind: 'ServiceAccount', name: 'scaler', namespace: e.ns.name }]);
    tt.same(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'scaler' });
    const head = await until(async () => (await pods(e, 'ray.io/cluster=scaler,ray.io/node-type=head'))[0], 'the head pod');
    tt.same(
      head.spec!.containers.map((c) => c.name),
      ['ray-head', 'autoscaler'],
    );
    tt.equal(head.spec!.serviceAccountName, 'scaler');
    tt.same(head.spec!.containers[1]!.args, [
      'ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)',
    ]);
    for (const reason of ['CreatedServiceAccount', 'CreatedRole', 'CreatedRoleBinding'])
      await until(async () => (await events(e, reason)).length === 1, `one ${reason} event`);
    const status = (await getCluster(e, 'scaler'))?.status as { conditions?: Array<{ type: string }> } | undefined;
    tt.notOk(
      status?.conditions?.some((c) => c.type === 'raykeeper.io/UnsupportedFields'),
      'autoscaling is no longer reported unsupported',
    );
  },
);

t.test(
  'a ServiceAccount named on the head template is never created: missing, no pods and a Warning; created, the cluster starts',
  async (tt) => {
    const e = await env(tt);
    await operator(tt, e);
    await e.kube.create(
      { ...RAYCLUSTERS, namespace: e.ns.name },
      autoscaling('own-sa', { replicas: 1, minReplicas: 0, maxReplicas: 2 }, 'mine'),
    );
    const warning = await until(async () => (await events(e, 'AutoscalerServiceAccountNotFound'))[0], 'AutoscalerServiceAccountNotFound');
    tt.match(warning.message, /ServiceAccount mine is not found\. Please create one/);
    tt.same(await pods(e, 'ray.io/cluster=own-sa'), [], 'no pods while it is missing');
    tt.notOk(await found(e, SERVICEACCOUNTS, 'mine'), 'not created by us');
    tt.notOk(await found(e, ROLES, 'own-sa'), 'nothing after the ServiceAccount either (KubeRay stops there)');
    await e.kube.create({ ...SERVICEACCOUNTS, namespace: e.ns.name }, { metadata: { name: 'mine' } });
    const head = await until(async () => (await pods(e, 'ray.io/cluster=own-sa,ray.io/node-type=head'))[0], 'the head pod once it exists');
    tt.equal(head.spec!.serviceAccountName, 'mine');
    const binding = await until(() => found(e, ROLEBINDINGS, 'own-sa'), 'the RoleBinding');
    tt.same(binding.subjects, [{ kind: 'ServiceAccount', name: 'mine', namespace: e.ns.name }], 'binds the user’s ServiceAccount');
    tt.notOk((await found(e, SERVICEACCOUNTS, 'mine'))?.metadata.ownerReferences, 'the user’s ServiceAccount is left unowned');
  },
);

t.test(
  'the autoscaler write pattern: replicas up; workersToDelete + replicas down with a conflict mid-scale; nothing reverted',
  async (tt) => {
    const e = await env(tt);
    const c = await operator(tt, e);
    const ref = { ...RAYCLUSTERS, namespace: e.ns.name, name: 'pattern' };
    // What the autoscaler sends (ray/autoscaler/_private/kuberay/node_provider.py): JSON patches of replicas and workersToDelete.
    const autoscalerPatch = (ops: unknown[]) => e.kube.patch(ref, ops, 'application/json-patch+json');

    // Another writer between the operator's read and its write: the operator's next status PUT first lets
    // `midScale` write (it carries the cached resourceVersion, so the API server answers 409).
    const kube = c.manager.ctx.kube as KubeClient;
    const replace = kube.replace.bind(kube);
    let midScale: (() => Promise<unknown>) | undefined;
    let conflicts = 0;
    kube.replace = (async (r: ResourceRef, body: unknown, options?: object) => {
      if (r.plural === 'rayclusters' && r.subresource === 'status' && r.name === 'pattern' && midScale) {
        const write = midScale;
        midScale = undefined;
        await write();
      }
      return replace(r, body, options).catch((err: unknown) => {
        if (isConflict(err)) conflicts++;
        throw err;
      });
    }) as typeof kube.replace;

    await e.kube.create({ ...RAYCLUSTERS, namespace: e.ns.name }, autoscaling('pattern', { replicas: 0, minReplicas: 0, maxReplicas: 5 }));
    await until(async () => (await pods(e, 'ray.io/cluster=pattern,ray.io/node-type=head')).length === 1, 'the head');
    tt.same(await workers(e, 'pattern'), [], 'replicas 0: no worker');

    await autoscalerPatch([{ op: 'replace', path: '/spec/workerGroupSpecs/0/replicas', value: 3 }]);
    const three = await until(async () => {
      const ws = await workers(e, 'pattern');
      return ws.length === 3 ? ws : undefined;
    }, 'replicas 3: three workers');
    tt.equal(three.length, 3);

    // The autoscaler lowers replicas without naming pods: the operator deletes none (the autoscaler decides).
    await autoscalerPatch([{ op: 'replace', path: '/spec/workerGroupSpecs/0/replicas', value: 2 }]);
    await until(async () => (await getCluster(e, 'pattern'))?.status?.desiredWorkerReplicas === 2, 'the operator saw replicas 2');
    await new Promise((r) => setTimeout(r, 1500));
    tt.same(await workers(e, 'pattern'), three, 'replicas 2 without workersToDelete: no pod deleted');

    // Scale down as the autoscaler does: two named, replicas 1 — written while the operator is mid-write.
    const listed = [three[0]!, three[2]!];
    midScale = () =>
      autoscalerPatch([
        { op: 'replace', path: '/spec/workerGroupSpecs/0/replicas', value: 1 },
        { op: 'add', path: '/spec/workerGroupSpecs/0/scaleStrategy', value: { workersToDelete: listed } },
      ]);
    // A status change makes the operator write: the head turns Ready.
    const [head] = await pods(e, 'ray.io/cluster=pattern,ray.io/node-type=head');
    await e.kube.patch(
      { ...PODS, namespace: e.ns.name, name: head!.metadata.name!, subresource: 'status' },
      { status: { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] } },
      'application/merge-patch+json',
    );
    await until(async () => (await workers(e, 'pattern')).length === 1, 'the listed workers deleted');
    tt.equal(midScale, undefined, 'the other write landed between our read and our write');
    tt.ok(conflicts >= 1, `our stale status write met a conflict (${conflicts}) and was retried`);
    tt.same(await workers(e, 'pattern'), [three[1]], 'exactly the listed pods deleted; the other kept');
    await until(async () => (await getCluster(e, 'pattern'))?.status?.desiredWorkerReplicas === 1, 'the status written after the retry');
    const after = (await getCluster(e, 'pattern'))!.spec!.workerGroupSpecs![0]! as WorkerGroupSpec;
    tt.equal(after.replicas, 1, "the autoscaler's replicas not reverted");
    tt.same(after.scaleStrategy?.workersToDelete, listed, 'the list is the autoscaler’s to clear: our operator never writes the spec');

    // The autoscaler clears its list once the pods are gone (KubeRayNodeProvider.safe_to_scale).
    await autoscalerPatch([{ op: 'replace', path: '/spec/workerGroupSpecs/0/scaleStrategy/workersToDelete', value: [] }]);
    await new Promise((r) => setTimeout(r, 1500));
    tt.same(await workers(e, 'pattern'), [three[1]], 'clearing the list changes nothing');
    const last = (await getCluster(e, 'pattern'))!.spec!.workerGroupSpecs![0]! as WorkerGroupSpec;
    tt.equal(last.replicas, 1);
    tt.same(last.scaleStrategy?.workersToDelete, []);
  },
);
