// `raykeeper dev`: start the local environment, print where it is, run until Ctrl-C / SIGTERM.
import { parseArgs } from 'node:util';
import { readyText, startDev } from './dev.ts';
import { startKubeletDev } from './kubelet.ts';
import { errorMessage } from '../src/errors.ts';

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
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        'state-dir': { type: 'string' },
        kubelet: { type: 'boolean' },
        'no-validating-webhook': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (err) {
    process.stderr.write(`raykeeper dev: ${errorMessage(err)}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
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
