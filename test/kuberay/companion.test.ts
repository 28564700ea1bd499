// Companion mode's pure parts as tables: the flag, the Lease judgement, the decision, and which
// reconcilers start. (KubeRay's real operator beside ours: beside-kuberay.test.ts.)
import t from 'tap';
import { kustomize } from '../helpers/kustomize.ts';
import { pino } from 'pino';
import { createMetricsRegistry } from '../../kube/metrics.ts';
import {
  COMPANION_SKIPPED,
  KUBERAY_CLEANUP_WATCH,
  companionDecision,
  companionModules,
  leaseIsHeld,
  parseCompanionSetting,
} from '../../controller/companion.ts';
import type { ReconcilerModule } from '../../kube/reconciler.ts';
import type { KubeClient } from '../../kube/client.ts';

t.test('--companion accepts auto, on, off (any case), defaults to auto, refuses the rest', async (t) => {
  t.equal(parseCompanionSetting(undefined), 'auto');
  t.equal(parseCompanionSetting('ON'), 'on');
  t.equal(parseCompanionSetting(' off '), 'off');
  t.throws(() => parseCompanionSetting('yes'), /auto, on, off/);
});

t.test('a Lease counts as a running KubeRay only when held and recently renewed', async (t) => {
  const now = Date.parse('2026-12-01T10:00:00Z');
  const lease = (holder: string, renewed: string, duration = 15) => ({
    metadata: { name: 'ray-operator-leader', namespace: 'ray-system' },
    spec: { holderIdentity: holder, renewTime: renewed, leaseDurationSeconds: duration },
  });
  const rows: Array<[string, Parameters<typeof leaseIsHeld>[0], boolean]> = [
    ['held, renewed 2 s ago', lease('kuberay-abc', '2026-12-01T09:59:58Z'), true],
    ['held, renewed 29 s ago (one duration of slack)', lease('kuberay-abc', '2026-12-01T09:59:31Z'), true],
    ['held, renewed 31 s ago: the operator is gone', lease('kuberay-abc', '2026-12-01T09:59:29Z'), false],
    ['released (no holder)', lease('', '2026-12-01T09:59:59Z'), false],
    ['never renewed', { metadata: {}, spec: { holderIdentity: 'x' } }, false],
  ];
  for (const [name, l, held] of rows) t.equal(leaseIsHeld(l, now), held, name);
});

t.test('the decision: the flag wins; auto follows detection', async (t) => {
  const found = { found: true as const, lease: 'ray-system/ray-operator-leader', holder: 'kuberay-abc' };
  const missing = { found: false as const, why: 'no Lease ray-operator-leader in any namespace' };
  t.match(companionDecision('on', undefined), { active: true, reason: 'flag-on' });
  t.match(companionDecision('off', undefined), { active: false, reason: 'flag-off' });
  t.match(companionDecision('auto', found), {
    active: true,
    reason: 'kuberay-detected',
    detail: /ray-system\/ray-operator-leader held by kuberay-abc/,
  });
  t.match(companionDecision('auto', missing), { active: false, reason: 'kuberay-not-detected', detail: /no Lease/ });
});

t.test('companion mode leaves out the reconcilers that fight KubeRay, says so in a log line and a metric', async (t) => {
  const module = (name: string): ReconcilerModule => ({
    name,
    summary: name,
    create: () => ({ name, reconciler: { reconcile: async () => undefined }, watches: [] }),
  });
  const all = [module('raycluster'), module('rayjob'), module('raycluster-pods')];
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
  const noKube = {} as KubeClient; // on/off never look anything up
  const run = async (setting: 'on' | 'off', env: Record<string, string> = {}) => {
    const metrics = createMetricsRegistry();
    const modules = await companionModules({ kube: noKube, logger, metrics, env, now: Date.now }, all, setting);
    return { names: modules.map((m) => m.name), metrics: await metrics.getSingleMetricAsString('raykeeper_companion_mode') };
  };
  const on = await run('on');
  t.same(on.names, ['raycluster', KUBERAY_CLEANUP_WATCH], 'rayjob and raycluster-pods not started; the cleanup watch added');
  t.same([...COMPANION_SKIPPED].sort(), ['raycluster-pods', 'raycronjob', 'rayjob']);
  t.match(on.metrics, /raykeeper_companion_mode\{reason="flag-on"\} 1/);
  t.match(lines.at(-1), /companion mode: --companion=on; not starting rayjob, raycluster-pods \(KubeRay runs them\)/);
  const gateOff = await run('on', { ENABLE_GCS_FT_REDIS_CLEANUP: 'false' });
  t.same(gateOff.names, ['raycluster'], 'our cleanup off: nothing to warn about');
  const off = await run('off');
  t.same(off.names, ['raycluster', 'rayjob', 'raycluster-pods'], 'off: everything starts');
  t.match(off.metrics, /raykeeper_companion_mode\{reason="flag-off"\} 0/);
});

t.test('manifests/companion renders base with the controller in companion mode and our cleanup on', async (t) => {
  const docs = kustomize('manifests/companion') as Array<{ kind: string; metadata: { name: string }; spec?: Record<string, unknown> }>;
  t.notOk(
    docs.some((d) => d.kind === 'CustomResourceDefinition'),
    "no CRDs of ours: KubeRay's chart installs its own",
  );
  const deployment = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === 'raykeeper-controller') as
    | { spec: { template: { spec: { containers: Array<{ args: string[]; env: Array<{ name: string; value?: string }> }> } } } }
    | undefined;
  const container = deployment?.spec.template.spec.containers[0];
  t.ok(container?.args.includes('--companion=on'), 'the controller runs with --companion=on');
  t.not(
    container?.env.find((e) => e.name === 'ENABLE_GCS_FT_REDIS_CLEANUP')?.value,
    'false',
    "our Redis cleanup stays on (KubeRay's is the one turned off)",
  );
  const webhook = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === 'raykeeper-webhook') as
    | { spec: { template: { spec: { containers: Array<{ args: string[] }> } } } }
    | undefined;
  t.ok(webhook?.spec.template.spec.containers[0]?.args.includes('--companion=on'), 'the webhook is there too, with --companion=on');
});
