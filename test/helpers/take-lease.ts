// A second replica as a separate process: campaigns for a Lease with the project's elector and exits 0
// as soon as it holds it (without releasing). A test whose own process is stalled runs it with
// spawnSync, so "another replica took over" is a fact when the stall ends.
// Usage: node test/helpers/take-lease.ts KUBECONFIG NAMESPACE NAME IDENTITY
import { LeaderElector } from '../../kube/leader.ts';
import { KubeClient } from '../../kube/client.ts';
import { loadKubeConfig } from '../../kube/kubeconfig.ts';

const [kubeconfig, namespace, name, identity] = process.argv.slice(2) as [string, string, string, string];
const kube = new KubeClient(loadKubeConfig(kubeconfig));
const elector = new LeaderElector({ kube, namespace, name, identity, leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 200 });
const stop = new AbortController();
await elector.run(stop.signal, { onStartedLeading: () => stop.abort(), onStoppedLeading: () => undefined });
kube.close();
process.stdout.write(`${identity} holds ${namespace}/${name}\n`);
