// KubeRay as the oracle: its own operator (v1.6.2, built by tools/build-kuberay.sh into the cache) runs on
// a control plane of its own with KubeRay's CRDs; for the same RayClusters our builders' pods and head
// Service are compared with KubeRay's, per node type: `ray start` flags and values, env names and values,
// container ports, ray.io/* labels, GCS-FT annotations, the head Service's ports and selector; the
// template's other containers and restartPolicy (the RayCluster our RayJob controller builds for a
// SidecarMode RayJob is one of the samples); for autoscaling clusters (v1, v2) the autoscaler container
// whole, the ServiceAccount and the autoscaler's ServiceAccount / Role / RoleBinding; for token auth, the
// env and KubeRay's generated Secret. And two behaviours our operator copies (issue 47): KubeRay leaves a
// status edited through /status as written until something else triggers it (its RayCluster watch filters on
// generation, labels and annotations), and a head stamped by another hasher (ours) is re-stamped, not recreated,
// under upgradeStrategy Recreate, which then recreates every pod, the head under a new generated name.
// The differences we chose are listed in README ("RayCluster operator") and excluded here by name only.
// Fails, naming the set-up command, when the operator binary or KubeRay's CRDs are missing.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { cacheDir, REPO_ROOT } from '../../localcluster/binaries.ts';
import { errorMessage } from '../../src/errors.ts';
import { kubeRayCrds } from '../kuberay/helpers.ts';
import { missingPart } from '../helpers/parts.ts';
import { loopbackEnv, startControlPlane } from '../../localcluster/control-plane.ts';
import { KubeClient, MERGE_PATCH } from '../../kube/client.ts';
import { buildHeadPod, buildWorkerPod } from '../../src/raycluster/pods.ts';
import type { WorkerGroupSpec } from '../../src/raycluster/groups.ts';
import { ownerReference } from '../../src/raycluster/names.ts';
import { autoscalerRbac } from '../../src/raycluster/autoscaler.ts';
import type { ApiObject, Pod, Secret, Service } from '../../kube/model.ts';
import { buildAuthSecret } from '../../src/raycluster/auth.ts';
import { buildHeadService } from '../../src/raycluster/service.ts';
import { RAYCLUSTERS, type RayCluster, type RayJob } from '../../src/types.ts';
import { buildRayCluster } from '../../src/rayjob/builders.ts';
import { until } from '../helpers/harness.ts';
import type { RayClusterStatus } from '../../src/raycluster/status.ts';
import { clusterSpecHash, HASH_VERSION, KUBERAY_VERSION_ANNOTATION, RECREATE_HASH_ANNOTATION } from '../../src/raycluster/upgrade.ts';
import { kuberaySample } from './samples.ts';
import { NAMESPACES, PODS, ROLEBINDINGS, ROLES, SECRETS, SERVICEACCOUNTS, SERVICES, type Resource } from '../../kube/resources.ts';

const VERSION = 'v1.6.2';

function locate(): { bin: string; crds: string } | { missing: string } {
  const bin = process.env.RAYKEEPER_KUBERAY_OPERATOR ?? join(cacheDir(process.env), 'bin', `ray-operator-${VERSION}`);
  if (!existsSync(bin)) return { missing: `KubeRay's operator is not built (${bin})` };
  try {
    return { bin, crds: kubeRayCrds() };
  } catch (err) {
    return { missing: `KubeRay's CRDs cannot be found (tools/build-kuberay.sh --print-crds): ${errorMessage(err)}` };
  }
}

/** Our intended differences (README): who made the pod says so. */
const OWN_LABELS = new Set(['app.kubernetes.io/created-by']);
const OWN_ENV = new Set(['RAY_USAGE_STATS_EXTRA_TAGS']);
/** The upgrade stamp: the same keys, each operator's own hash and version (src/raycluster/upgrade.ts), checked apart. */
const OWN_ANNOTATIONS = new Set(['ray.io/kuberay-version', 'ray.io/upgrade-strategy-recreate-hash']);

const flags = (s: string) => s.split(/\s+/).filter(Boolean).sort();

function envView(p: Pod): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const e of p.spec?.containers[0]?.env ?? []) {
    if (OWN_ENV.has(e.name)) continue;
    out[e.name] = e.name === 'KUBERAY_GEN_RAY_START_CMD' ? flags(e.value ?? '') : e.valueFrom !== undefined ? e.valueFrom : (e.value ?? '');
  }
  return out;
}

/** A probe without what the API server defaults when it stores a pod (httpGet.scheme HTTP): ours are built, KubeRay's are read back. */
function probeView(probe: Record<string, unknown> | undefined): unknown {
  const httpGet = probe?.httpGet as Record<string, unknown> | undefined;
  if (!probe || !httpGet || httpGet.scheme !== 'HTTP') return probe;
  const { scheme: _default, ...rest } = httpGet;
  return { ...probe, httpGet: rest };
}

/** The API server's default imagePullPolicy: Always for :latest or no tag, else IfNotPresent. */
function defaultPullPolicy(image: string | undefined): string {
  const tag = /:([^/:@]+)$/.exec(image ?? '')?.[1];
  return tag === undefined || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

function view(p: Pod) {
  const c = p.spec!.containers[0]!;
  const labels = Object.fromEntries(
    Object.entries(p.metadata.labels ?? {}).filter(([k]) => !OWN_LABELS.has(k) && k !== 'ray.io/worker-group-replica-index'),
  );
  return {
    command: c.command,
    args: flags(c.args?.[0] ?? ''),
    env: envView(p),
    ports: (c.ports ?? []).map((x) => [x.name, x.containerPort]),
    labels,
    annotations: Object.fromEntries(
      Object.entries(p.metadata.annotations ?? {}).filter(([k]) => k.startsWith('ray.io/') && !OWN_ANNOTATIONS.has(k)),
    ),
    volumes: (p.spec!.volumes ?? []).map((v) => v.name),
    mounts: (c.volumeMounts ?? []).map((m) => m.mountPath),
    probes: [probeView(c.livenessProbe), probeView(c.readinessProbe)],
    init: (p.spec!.initContainers ?? []).map((i) => ({ name: i.name, env: (i.env ?? []).map((e) => e.name) })),
    restartPolicy: p.spec!.restartPolicy ?? 'Always', // the API server's default
    serviceAccountName: p.spec!.serviceAccountName ?? 'default', // the API server's default
    // SidecarMode's submitter (and any other container of the template) as it reaches the pod.
    others: p.spec!.containers.slice(1).map((x) => ({
      name: x.name,
      image: x.image,
      command: x.command,
      args: x.args,
      env: x.env?.map((e) => (e.value === '' ? { name: e.name } : e)), // the API server drops an empty value
      resources: x.resources,
      ports: x.ports,
      imagePullPolicy: x.imagePullPolicy ?? defaultPullPolicy(x.image),
      securityContext: x.securityContext,
      envFrom: x.envFrom,
      mounts: (x.volumeMounts ?? []).map((m) => [m.name, m.mountPath, m.readOnly ?? false]),
    })),
  };
}

/** The autoscaler's ServiceAccount / Role / RoleBinding: what KubeRay sets on them (its owner's uid aside). */
function rbacView(o: Record<string, any>) {
  return {
    name: o.metadata.name,
    labels: Object.fromEntries(Object.entries(o.metadata.labels ?? {}).filter(([k]) => !OWN_LABELS.has(k))),
    owners: (o.metadata.ownerReferences ?? []).map((r: Record<string, unknown>) => [r.kind, r.name, r.controller, r.blockOwnerDeletion]),
    rules: o.rules,
    subjects: o.subjects,
    roleRef: o.roleRef,
  };
}

function serviceView(s: Service) {
  return {
    ports: (s.spec?.ports ?? []).map((p) => [p.name, p.port, p.appProtocol]),
    selector: Object.fromEntries(Object.entries(s.spec?.selector ?? {}).filter(([k]) => !OWN_LABELS.has(k))),
    clusterIP: s.spec?.clusterIP === 'None' ? 'None' : 'allocated',
    publishNotReadyAddresses: s.spec?.publishNotReadyAddresses ?? false,
  };
}

const where = locate();
if ('missing' in where) {
  t.fail(missingPart(where.missing));
} else {
  t.test(`our pods and head Service = KubeRay ${VERSION}'s for its samples`, { timeout: 360_000 }, async (t) => {
    const cp = await startControlPlane({ crdsDir: where.crds });
    t.teardown(() => cp.stop());
    const kube = new KubeClient(cp.kubeConfig());
    t.teardown(() => kube.close());
    const ns = 'oracle';
    await kube.create(NAMESPACES, { metadata: { name: ns } });
    const op = spawn(
      where.bin,
      [
        '--metrics-addr=0',
        '--health-probe-bind-address=0',
        '--enable-leader-election=false',
        `--watch-namespace=${ns}`,
        '--log-stdout-encoder=console',
      ],
      {
        env: { ...loopbackEnv(), KUBECONFIG: cp.info.kubeconfigPath, HOME: process.env.HOME ?? '/tmp' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let log = '';
    op.stdout!.on('data', (d) => (log += d));
    op.stderr!.on('data', (d) => (log += d));
    t.teardown(() => {
      if (op.exitCode === null) op.kill('SIGKILL');
    });

    const gcsFt = parse(readFileSync(join(REPO_ROOT, 'manifests/samples/raycluster-gcs-ft.yaml'), 'utf8')) as RayCluster;
    const withCmd = kuberaySample();
    withCmd.metadata.name = 'with-command';
    withCmd.spec!.headGroupSpec!.template!.spec!.containers![0]!.command = ['echo', 'before'];
    (withCmd.spec!.workerGroupSpecs![0] as WorkerGroupSpec).rayStartParams = { 'num-gpus': '0', 'log-color': 'true' };
    const multi = kuberaySample();
    multi.metadata.name = 'multi-host';
    (multi.spec!.workerGroupSpecs![0] as WorkerGroupSpec).numOfHosts = 2;
    // What our RayJob controller creates for manifests/samples/rayjob-sidecar.yaml: KubeRay's operator
    // must make the same head pod of it (the submitter container, restartPolicy Never).
    const sidecarJob = parse(readFileSync(join(REPO_ROOT, 'manifests/samples/rayjob-sidecar.yaml'), 'utf8')) as RayJob;
    sidecarJob.metadata.namespace = ns;
    sidecarJob.status = { jobId: 'rayjob-sidecar-x7k2p' };
    const sidecar = buildRayCluster(sidecarJob, 'sidecar-mode');
    delete sidecar.metadata.ownerReferences; // no such RayJob on this control plane
    // Autoscaling v1 with every autoscalerOptions override, and v2 with a group's idleTimeoutSeconds.
    const scaleV1 = kuberaySample();
    scaleV1.metadata.name = 'autoscaler-v1';
    scaleV1.spec!.enableInTreeAutoscaling = true;
    scaleV1.spec!.autoscalerOptions = {
      upscalingMode: 'Default',
      idleTimeoutSeconds: 60,
      imagePullPolicy: 'Always',
      resources: { limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '250m', memory: '256Mi' } },
      env: [{ name: 'AUTOSCALER_LOG_LEVEL', value: 'debug' }],
      envFrom: [{ configMapRef: { name: 'autoscaler-env' } }],
      volumeMounts: [{ name: 'ca', mountPath: '/etc/ca', readOnly: true }],
      securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, runAsNonRoot: true },
    };
    scaleV1.spec!.headGroupSpec!.template!.spec!.volumes = [{ name: 'ca', configMap: { name: 'ca' } }];
    const scaleV2 = kuberaySample();
    scaleV2.metadata.name = 'autoscaler-v2';
    scaleV2.spec!.enableInTreeAutoscaling = true;
    scaleV2.spec!.autoscalerOptions = { version: 'v2' };
    (scaleV2.spec!.workerGroupSpecs![0] as WorkerGroupSpec).idleTimeoutSeconds = 30;
    const autoscaling = [scaleV1, scaleV2];
    // Token auth: the Secret KubeRay generates, and one the user names.
    const token = kuberaySample();
    token.metadata.name = 'token-auth';
    (token.spec as Record<string, unknown>).authOptions = { mode: 'token' };
    const named = kuberaySample();
    named.metadata.name = 'token-named';
    (named.spec as Record<string, unknown>).authOptions = { mode: 'token', secretName: 'given-token' };
    const samples = [kuberaySample(), gcsFt, withCmd, multi, sidecar, ...autoscaling, token, named];
    for (const c of samples) await kube.create({ ...RAYCLUSTERS, namespace: ns }, c);

    for (const sample of samples) {
      const name = sample.metadata.name!;
      const theirs = await until(
        async () => {
          if (op.exitCode !== null) throw new Error(`KubeRay's operator exited: ${log.slice(-3000)}`);
          const ps = (await kube.list({ ...PODS, namespace: ns }, { labelSelector: `ray.io/cluster=${name}` })).items;
          return ps.some((p) => p.metadata.labels?.['ray.io/node-type'] === 'head') &&
            ps.some((p) => p.metadata.labels?.['ray.io/node-type'] === 'worker')
            ? ps
            : undefined;
        },
        `KubeRay's pods of ${name}`,
        90_000,
        500,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; KubeRay's log: ${log.slice(-4000)}`);
      });
      // KubeRay's stored object (defaults applied by its CRD, UID, finalizer) is what we build from too.
      const stored = await kube.get({ ...RAYCLUSTERS, namespace: ns, name });
      const head = theirs.find((p) => p.metadata.labels?.['ray.io/node-type'] === 'head')!;
      const worker = theirs.find((p) => p.metadata.labels?.['ray.io/node-type'] === 'worker')!;
      const group = stored.spec!.workerGroupSpecs![0] as WorkerGroupSpec;
      const index = {
        replicaIndex: Number(worker.metadata.labels?.['ray.io/worker-group-replica-index'] ?? 0),
        replicaName: worker.metadata.labels?.['ray.io/worker-group-replica-name'],
        hostIndex: Number(worker.metadata.labels?.['ray.io/replica-host-index'] ?? 0),
      };
      t.same(view(buildHeadPod(stored)), view(head), `${name}: head pod (flags, env, ports, labels, annotations, volumes, probes)`);
      t.same(view(buildWorkerPod(stored, group, index)), view(worker), `${name}: worker pod`);
      t.equal(head.metadata.generateName, buildHeadPod(stored).metadata.generateName, `${name}: head generateName`);
      t.match(
        head.metadata.annotations,
        { [RECREATE_HASH_ANNOTATION]: /^[0-9A-V]{32}$/, [KUBERAY_VERSION_ANNOTATION]: VERSION },
        `${name}: KubeRay stamps every head with a 32-character base32hex spec hash and its version, as we do`,
      );
      t.equal(worker.metadata.generateName, buildWorkerPod(stored, group, index).metadata.generateName, `${name}: worker generateName`);
      const svc = await until(
        () => kube.getOrUndefined({ ...SERVICES, namespace: ns, name: `${name}-head-svc` }),
        `KubeRay's head Service of ${name}`,
        60_000,
        500,
      );
      t.same(serviceView(buildHeadService(stored)), serviceView(svc), `${name}: head Service ports and selector`);
    }
    for (const sample of autoscaling) {
      const name = sample.metadata.name!;
      const stored = await kube.get({ ...RAYCLUSTERS, namespace: ns, name });
      for (const ours of autoscalerRbac(stored, ownerReference(stored))) {
        const ref: Resource<ApiObject> = { ServiceAccount: SERVICEACCOUNTS, Role: ROLES, RoleBinding: ROLEBINDINGS }[ours.kind];
        const theirs = await until(
          () => kube.getOrUndefined({ ...ref, namespace: ns, name: ours.lookupName }),
          `KubeRay's ${ours.kind} of ${name}`,
          60_000,
          500,
        );
        t.same(rbacView(ours.body), rbacView(theirs), `${name}: ${ours.kind} (name, labels, owner, rules, subjects, roleRef)`);
      }
    }
    // The generated Secret (the token differs: its structure is compared).
    const secretView = (s: Secret) => ({
      name: s.metadata.name,
      labels: s.metadata.labels,
      owners: (s.metadata.ownerReferences ?? []).map((o) => [o.kind, o.name, o.controller, o.blockOwnerDeletion]),
      keys: Object.keys({ ...s.data, ...s.stringData }),
      type: s.type ?? 'Opaque', // the API server's default
    });
    const theirSecret = await until(
      () => kube.getOrUndefined({ ...SECRETS, namespace: ns, name: 'token-auth' }),
      "KubeRay's auth Secret",
      60_000,
      500,
    );
    const tokenCluster = await kube.get({ ...RAYCLUSTERS, namespace: ns, name: 'token-auth' });
    t.same(secretView(buildAuthSecret(tokenCluster, 'x')), secretView(theirSecret), 'token-auth: the generated Secret');
    t.equal(Buffer.from(Buffer.from(theirSecret.data!.auth_token!, 'base64').toString(), 'base64').length, 32, 'both: 32 random bytes');
    t.equal(await kube.getOrUndefined({ ...SECRETS, namespace: ns, name: 'token-named' }), undefined, 'token-named: none generated');
    const headless = await until(
      () => kube.getOrUndefined({ ...SERVICES, namespace: ns, name: 'multi-host-headless' }),
      'the headless worker Service',
      60_000,
      500,
    );
    t.same(headless.spec?.selector, { 'ray.io/cluster': 'multi-host', 'ray.io/node-type': 'worker' });
    t.equal(headless.spec?.clusterIP, 'None');

    // A status edited through /status: left as written until a real trigger (e2erayjob "RayCluster status
    // update propagates to RayJob" relies on it).
    const sampleName = kuberaySample().metadata.name!;
    const statusOf = async (n: string) => (await kube.get({ ...RAYCLUSTERS, namespace: ns, name: n })).status as RayClusterStatus;
    // A reconcile already scheduled (KubeRay requeues 2 s after its own status write) recomputes the status
    // whenever it runs: each try lets that one go by, up to five; one edit kept shows the predicate, an
    // operator reacting to status edits keeps none.
    const computed = (await statusOf(sampleName)).maxWorkerReplicas!;
    const kept: boolean[] = [];
    for (let i = 1; i <= 5 && !kept.includes(true); i++) {
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      const before = await kube.get({ ...RAYCLUSTERS, namespace: ns, name: sampleName });
      await kube.replace(
        { ...RAYCLUSTERS, namespace: ns, name: sampleName, subresource: 'status' },
        { ...before, status: { ...before.status, maxWorkerReplicas: computed + 2 } },
      );
      const later = kuberaySample();
      later.metadata.name = `later-${i}`;
      await kube.create({ ...RAYCLUSTERS, namespace: ns }, later);
      await until(
        async () => (await statusOf(`later-${i}`))?.maxWorkerReplicas !== undefined,
        `KubeRay acted on a later cluster ${i} (its watch is past the edit)`,
        60_000,
        500,
      );
      kept.push((await statusOf(sampleName)).maxWorkerReplicas === computed + 2);
    }
    t.ok(kept.includes(true), `KubeRay: a status-only edit is not written back (kept per try: ${kept.join(', ')})`);
    await kube.patch({ ...RAYCLUSTERS, namespace: ns, name: sampleName }, { metadata: { labels: { touched: 'yes' } } }, MERGE_PATCH);
    await until(
      async () => (await statusOf(sampleName)).maxWorkerReplicas === computed,
      'KubeRay: recomputed after a label change',
      60_000,
      500,
    );

    // upgradeStrategy Recreate: KubeRay re-stamps a head stamped by us, then recreates on a spec change.
    const recreate = kuberaySample();
    recreate.metadata.name = 'recreate';
    (recreate.spec as Record<string, unknown>).upgradeStrategy = { type: 'Recreate' };
    await kube.create({ ...RAYCLUSTERS, namespace: ns }, recreate);
    const headOf = async () =>
      (await kube.list({ ...PODS, namespace: ns }, { labelSelector: 'ray.io/cluster=recreate,ray.io/node-type=head' })).items;
    const [first] = await until(
      async () => ((await headOf()).length === 1 ? headOf() : undefined),
      "KubeRay's head of recreate",
      60_000,
      500,
    );
    const ourStamp = {
      [KUBERAY_VERSION_ANNOTATION]: HASH_VERSION,
      [RECREATE_HASH_ANNOTATION]: clusterSpecHash(await kube.get({ ...RAYCLUSTERS, namespace: ns, name: 'recreate' })),
    };
    await kube.patch({ ...PODS, namespace: ns, name: first!.metadata.name! }, { metadata: { annotations: ourStamp } }, MERGE_PATCH);
    await kube.patch({ ...RAYCLUSTERS, namespace: ns, name: 'recreate' }, { metadata: { labels: { touched: 'yes' } } }, MERGE_PATCH);
    const [restamped] = await until(
      async () => {
        const hs = await headOf();
        return hs[0]?.metadata.annotations?.[KUBERAY_VERSION_ANNOTATION] === VERSION ? hs : undefined;
      },
      'KubeRay re-stamps our head',
      60_000,
      500,
    );
    t.equal(restamped!.metadata.uid, first!.metadata.uid, 'KubeRay: a head stamped by another hasher is re-stamped, not recreated');
    t.not(
      restamped!.metadata.annotations?.[RECREATE_HASH_ANNOTATION],
      ourStamp[RECREATE_HASH_ANNOTATION],
      'KubeRay hashes its Go structs: another value',
    );
    await kube.patch(
      { ...RAYCLUSTERS, namespace: ns, name: 'recreate' },
      [{ op: 'replace', path: '/spec/headGroupSpec/template/spec/containers/0/image', value: 'rayproject/ray:2.51.0' }],
      'application/json-patch+json',
    );
    const [renewed] = await until(
      async () => {
        const hs = await headOf();
        return hs.length === 1 && hs[0]!.metadata.uid !== first!.metadata.uid ? hs : undefined;
      },
      'KubeRay recreates the head after the spec change',
      60_000,
      500,
    );
    t.not(renewed!.metadata.name, first!.metadata.name, 'KubeRay: the new head has a new generated name');
  });
}
