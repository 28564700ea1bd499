// The documented CRD upgrade (docs/operate/upgrade.md), on a real kube-apiserver of its own (CRDs are
// cluster-wide: replacing them on the shared control plane would pull them from under the other tests):
// the chart's CRDs of its first release (commit e3ed8fa: RayCluster and RayJob, no RayCronJob, no RayJob
// deletionStrategy), installed by `helm install` as Helm installs crds/ (and never upgrades them), a RayJob
// stored under them; then the documented command, `kubectl apply --server-side --force-conflicts -f
// charts/raykeeper/crds/`. What it proves: without --force-conflicts the apply is refused (Helm's field
// manager owns the fields that change: why the flag is in the document); with it the CRDs are the current
// ones (RayCronJob served; the RayJob deletionStrategy CEL rules enforced), the stored RayJob is kept as it
// was, and the release still upgrades with helm afterwards.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { requireKubeCommand } from '../../localcluster/binaries.ts';
import { startControlPlane } from '../../localcluster/control-plane.ts';
import { KubeClient, type KubeApiError } from '../../kube/client.ts';
import { CUSTOM_RESOURCE_DEFINITIONS } from '../../kube/resources.ts';
import { RAYJOBS } from '../../src/types.ts';
import { CHART_DIR, HELM_MAJORS, helmOk, requireHelm } from './helm.ts';

requireHelm();

const OLD_CRDS = join(import.meta.dirname, 'fixtures', 'crds-e3ed8fa');

const rayJob = (name: string, deletionStrategy?: unknown) => ({
  apiVersion: 'ray.io/v1',
  kind: 'RayJob',
  metadata: { name },
  spec: { entrypoint: 'python -c "print(1)"', shutdownAfterJobFinishes: true, ...(deletionStrategy ? { deletionStrategy } : {}) },
});
const BOTH = {
  onSuccess: { policy: 'DeleteCluster' },
  deletionRules: [{ policy: 'DeleteCluster', condition: { jobStatus: 'SUCCEEDED' } }],
};

for (const major of HELM_MAJORS) {
  t.test(`helm ${major}: CRDs installed by an older chart are upgraded by the documented command`, async (t) => {
    const cp = await startControlPlane({ crdsDir: false, onProgress: (m) => t.comment(`control plane: ${m}`) });
    const kube = new KubeClient(cp.kubeConfig('default'));
    t.teardown(async () => {
      kube.close();
      await cp.stop();
    });
    const kubeconfig = cp.info.kubeconfigPath;
    // The first release's chart as far as CRDs go: its crds/ and its Chart.yaml, no templates.
    const old = join(t.testdir(), 'raykeeper');
    mkdirSync(join(old, 'crds'), { recursive: true });
    for (const f of readdirSync(OLD_CRDS)) cpSync(join(OLD_CRDS, f), join(old, 'crds', f));
    writeFileSync(join(old, 'Chart.yaml'), 'apiVersion: v2\nname: raykeeper\nversion: 0.1.0\nappVersion: "0.1.0"\n');
    helmOk(['install', 'old', old, '--namespace', 'default', '--kubeconfig', kubeconfig], major);
    t.equal(
      await kube.getOrUndefined(CUSTOM_RESOURCE_DEFINITIONS.at(undefined, 'raycronjobs.ray.io')),
      undefined,
      'the old chart had no RayCronJob',
    );
    const stored = await kube.create({ ...RAYJOBS, namespace: 'default' }, rayJob('kept'));
    // Helm never upgrades crds/: an upgrade to the current chart leaves them as they were.
    helmOk(['upgrade', 'old', CHART_DIR, '--namespace', 'default', '--kubeconfig', kubeconfig, '--set', 'uninstall.hook=false'], major);
    t.equal(
      await kube.getOrUndefined(CUSTOM_RESOURCE_DEFINITIONS.at(undefined, 'raycronjobs.ray.io')),
      undefined,
      'helm upgrade did not add the new CRD',
    );
    await kube.create({ ...RAYJOBS, namespace: 'default' }, rayJob('old-schema', BOTH));
    t.pass('the old RayJob CRD knows no deletionStrategy rules: a RayJob with both legacy and rules is stored');

    const kubectl = (...args: string[]) =>
      spawnSync(requireKubeCommand('kubectl'), ['--kubeconfig', kubeconfig, ...args], {
        encoding: 'utf8',
        env: { ...process.env, NO_PROXY: '127.0.0.1' },
      });
    const plain = kubectl('apply', '--server-side', '-f', join(CHART_DIR, 'crds'));
    t.not(plain.status, 0, 'without --force-conflicts: refused');
    t.match(plain.stderr, /conflict/i, `the conflict with Helm's field manager: ${plain.stderr.split('\n')[0]}`);
    const forced = kubectl('apply', '--server-side', '--force-conflicts', '-f', join(CHART_DIR, 'crds'));
    t.equal(forced.status, 0, `the documented command succeeds: ${forced.stderr}`);
    for (const line of [
      'rayclusters.ray.io serverside-applied',
      'rayjobs.ray.io serverside-applied',
      'raycronjobs.ray.io serverside-applied',
    ])
      t.match(forced.stdout, line);
    const kubectlWait = kubectl('wait', '--for=condition=Established', '--timeout=60s', 'crd/raycronjobs.ray.io');
    t.equal(kubectlWait.status, 0, kubectlWait.stderr);

    for (const f of readdirSync(join(CHART_DIR, 'crds'))) {
      const want = parse(readFileSync(join(CHART_DIR, 'crds', f), 'utf8')) as { metadata: { name: string }; spec: { versions: unknown } };
      const got = await kube.get(CUSTOM_RESOURCE_DEFINITIONS.at(undefined, want.metadata.name));
      t.same(got.spec?.versions, want.spec.versions, `${want.metadata.name}: the chart's current schema is served`);
    }
    const refused = await kube.create({ ...RAYJOBS, namespace: 'default' }, rayJob('new-schema', BOTH)).then(
      () => undefined,
      (e: KubeApiError) => e,
    );
    t.match(
      refused?.message,
      /legacy policies \(onSuccess\/onFailure\) and deletionRules cannot be used together/,
      'the new CEL rule is enforced',
    );
    const kept = await kube.get({ ...RAYJOBS, namespace: 'default', name: 'kept' });
    t.equal(kept.metadata.uid, stored.metadata.uid, 'the RayJob stored under the old CRD is still there');
    t.same(kept.spec, stored.spec, 'unchanged');
    helmOk(
      [
        'upgrade',
        'old',
        CHART_DIR,
        '--namespace',
        'default',
        '--kubeconfig',
        kubeconfig,
        '--set',
        'uninstall.hook=false',
        '--set',
        'logLevel=debug',
      ],
      major,
    );
    t.pass('helm upgrade still works with the CRDs applied beside it');
  });
}
