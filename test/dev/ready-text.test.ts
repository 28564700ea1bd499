// What `raykeeper dev` prints when ready: the hints name a kubectl the user can run as printed.
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import t from 'tap';
import { hintKubectl, readyText } from '../../dev/dev.ts';
import { kubeCommandPath, REPO_ROOT } from '../../localcluster/binaries.ts';

t.test('hintKubectl: kubectl on PATH by name, else the one tools/setup.sh built', async (t) => {
  const dir = t.testdir();
  const withKubectl = join(dir, 'with');
  const without = join(dir, 'without');
  mkdirSync(withKubectl);
  mkdirSync(without);
  writeFileSync(join(withKubectl, 'kubectl'), '#!/bin/sh\n');
  chmodSync(join(withKubectl, 'kubectl'), 0o755);
  writeFileSync(join(without, 'kubectl'), 'not executable\n');
  const cache = { RAYKEEPER_CACHE: join(dir, 'cache') };
  t.equal(hintKubectl({ ...cache, PATH: `${without}:${withKubectl}` }), 'kubectl');
  t.equal(hintKubectl({ ...cache, PATH: without }), kubeCommandPath('kubectl', cache), 'a non-executable file does not count');
  t.equal(hintKubectl({ ...cache, PATH: '' }), kubeCommandPath('kubectl', cache));
  t.match(kubeCommandPath('kubectl', cache), /^.*\/cache\/bin\/kubectl-v\d+\.\d+\.\d+$/);
});

t.test('readyText: every kubectl hint uses the given kubectl and the kubeconfig', async (t) => {
  const env0 = {
    kubeconfig: '/state/kubeconfig',
    redis: { host: '127.0.0.1', port: 6399 },
    webhookUrl: 'https://127.0.0.1:9443',
    samples: ['/state/samples/rc.yaml'],
    stop: async () => {},
  };
  const text = readyText(env0 as Parameters<typeof readyText>[0], '/cache/bin/kubectl-v1.35.4');
  const hints = text.split('\n').filter((l) => /kubectl/.test(l));
  t.ok(hints.length >= 4, 'several kubectl hints');
  for (const line of hints) t.match(line, /^ {2}\/cache\/bin\/kubectl-v1\.35\.4 --kubeconfig \/state\/kubeconfig /, line);
  t.match(text, /^kubeconfig: \/state\/kubeconfig$/m);
  t.match(text, /^redis: 127\.0\.0\.1:6399$/m);
  const samples = [...text.matchAll(/ apply -f (\S+)/g)].map((m) => m[1] ?? '').filter((f) => f.startsWith(REPO_ROOT));
  t.same(
    samples.map((f) => basename(f)),
    ['rayjob.yaml', 'rayjob-sidecar.yaml', 'rayjob-deletion-rules.yaml', 'raycronjob.yaml'],
    'a hint for each RayJob sample',
  );
  for (const f of samples) t.ok(existsSync(f), `${f} exists`);
  t.match(text, /^Autoscaling \(enableInTreeAutoscaling\) needs `raykeeper dev --kubelet`/m, 'one line: autoscaling needs --kubelet');
  t.notMatch(
    readyText({ ...env0, node: 'localhost Ready' } as Parameters<typeof readyText>[0], 'kubectl'),
    /Autoscaling/,
    'not with a node',
  );
});

t.test("readyText: the controller's and the webhook's /metrics URLs, when dev runs them on loopback", async (t) => {
  const env = {
    kubeconfig: '/state/kubeconfig',
    redis: { host: '127.0.0.1', port: 6399 },
    webhookUrl: 'https://127.0.0.1:9443',
    samples: ['/state/samples/rc.yaml'],
    stop: async () => {},
  } as Parameters<typeof readyText>[0];
  t.match(
    readyText({ ...env, controllerUrl: 'http://127.0.0.1:8081' }, 'kubectl'),
    /^metrics: http:\/\/127\.0\.0\.1:8081\/metrics \(controller\) https:\/\/127\.0\.0\.1:9443\/metrics \(webhook\)$/m,
  );
  t.notMatch(readyText(env, 'kubectl'), /^metrics:/m, 'none without a controller URL (--kubelet: both run as pods)');
});
