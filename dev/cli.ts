// `raykeeper dev`: start the local environment, print where it is, run until Ctrl-C / SIGTERM.
import { readyText, startDev } from './dev.ts';
import { startKubeletDev } from './kubelet.ts';
import { finish, parseCommandLine } from '../bin/args.ts';

const USAGE = `Usage: raykeeper dev [--state-dir DIR] [--kubelet] [--no-validating-webhook]

Starts a local control plane (etcd + kube-apiserver built from source), a redis-server, the webhook,
the controller and a job runner on loopback, then prints the kubeconfig path and the Redis address.
Ctrl-C or SIGTERM stops everything. For a real cluster, install manifests/ instead (see README).

  --kubelet   a real node instead (root; bash tools/setup.sh --node first): containerd, kubelet,
              kube-proxy, kube-controller-manager, kube-scheduler, cluster DNS; raykeeper installed
              from manifests/ as pods of the image built from the Dockerfile, Redis as a pod.
  --no-validating-webhook
              register only the mutating webhook, not our ValidatingWebhookConfiguration: the
              controllers alone judge objects, as KubeRay's default install does (a RayJob KubeRay marks
              ValidationFailed is stored and marked so, instead of refused at kubectl apply).
`;

export async function run(argv: string[]): Promise<number> {
  const line = parseCommandLine(
    'raykeeper dev',
    argv,
    { 'state-dir': { type: 'string' }, kubelet: { type: 'boolean' }, 'no-validating-webhook': { type: 'boolean' } },
    USAGE,
  );
  if (line.kind === 'exit') return finish(line);
  const { values } = line;
  const options = { stateDir: values['state-dir'], validatingWebhook: values['no-validating-webhook'] !== true };
  const env = values.kubelet ? await startKubeletDev(options) : await startDev(options);
  process.stdout.write(readyText(env) + '\n');
  const signal = await new Promise<string>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  process.stderr.write(`${signal}: stopping...\n`);
  await env.stop();
  process.stderr.write('stopped\n');
  return 0;
}
