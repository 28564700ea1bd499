// `raykeeper dev --no-validating-webhook`: the install without our ValidatingWebhookConfiguration, so the
// controllers alone judge objects, as KubeRay's default install does (how KubeRay's e2e TestRayJob cases
// "RuntimeEnvYAML is not a valid YAML string" and "RayJob name too long with 48 characters" run against us:
// the RayJob is stored and ends ValidationFailed). Embedded dev as a real process (without Ray: nothing
// here needs a Ray pod), and the `--kubelet` install's overlay rendered with kustomize.
import { writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { dropValidatingWebhook } from '../../dev/kubelet.ts';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { kustomize } from '../helpers/kustomize.ts';
import { until } from '../helpers/until.ts';
import { run, startDevProcess, stopDev } from './dev-process.ts';

t.test('--kubelet: the overlay leaves the ValidatingWebhookConfiguration out, and nothing else', async (t) => {
  const dir = t.testdir();
  writeFileSync(join(dir, 'kustomization.yaml'), stringify({ resources: [relative(dir, join(REPO_ROOT, 'manifests', 'default'))] }));
  const before = kustomize(dir).map((o) => `${o.kind}/${o.metadata.name}`);
  t.ok(before.includes('ValidatingWebhookConfiguration/raykeeper'), 'the install has it');
  await dropValidatingWebhook(dir);
  await dropValidatingWebhook(dir); // idempotent: one patch
  const after = kustomize(dir).map((o) => `${o.kind}/${o.metadata.name}`);
  t.same(
    after,
    before.filter((k) => k !== 'ValidatingWebhookConfiguration/raykeeper'),
    'all but the validating webhook',
  );
  t.ok(after.includes('MutatingWebhookConfiguration/raykeeper'), 'the mutating webhook stays');
});

t.test(
  'raykeeper dev --no-validating-webhook: a RayJob KubeRay marks ValidationFailed is stored and marked so',
  { timeout: 240_000 },
  async (t) => {
    const d = await startDevProcess(t, { RAYKEEPER_RAY: '/nonexistent/ray' }, ['--no-validating-webhook']);
    t.match(d.out.text, /^webhook: https:\/\/127\.0\.0\.1:\d+ \(mutating only: --no-validating-webhook; /m, 'the ready text says so');
    t.equal(run(['get', 'validatingwebhookconfigurations', '-o', 'name'], d.kubeconfig).trim(), '', 'no ValidatingWebhookConfiguration');
    t.match(run(['get', 'mutatingwebhookconfigurations', '-o', 'name'], d.kubeconfig), /raykeeper/, 'the mutating one is registered');
    const job = {
      apiVersion: 'ray.io/v1',
      kind: 'RayJob',
      metadata: { name: 'invalid-yamlstr', namespace: 'default' },
      spec: {
        entrypoint: 'python /home/ray/jobs/counter.py',
        runtimeEnvYAML: 'invalid_yaml_string',
        rayClusterSpec: { headGroupSpec: { rayStartParams: {}, template: { spec: { containers: [{ name: 'ray-head', image: 'x' }] } } } },
      },
    };
    run(['apply', '-f', '-'], d.kubeconfig, JSON.stringify(job));
    const status = await until(() => {
      const s = JSON.parse(run(['get', 'rayjob', 'invalid-yamlstr', '-o', 'json'], d.kubeconfig)).status ?? {};
      return s.jobDeploymentStatus === 'ValidationFailed' ? s : undefined;
    }, 'ValidationFailed');
    t.equal(status.reason, 'ValidationFailed');
    t.match(status.message, /^failed to unmarshal RuntimeEnvYAML: invalid_yaml_string: /);
    await stopDev(t, d);
  },
);
