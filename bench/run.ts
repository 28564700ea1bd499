// `npm run bench [-- webhook redis-cleanup import-cost controller rayjob]`: each part prints its figures, beside its baseline
// (measured in the same run on this machine) where it has one. Benchmarks, not tests: nothing here passes or fails on speed.
import { runControllerBench } from './controller.ts';
import { runImportCostBench } from './import-cost.ts';
import { runRayJobBench } from './rayjob.ts';
import { runRedisCleanupBench } from './redis-cleanup.ts';
import { runRayClusterPodsBench } from './raycluster-pods.ts';
import { runWebhookBench } from './webhook.ts';
import { runWebhookMemoryBench } from './webhook-memory.ts';

const PARTS: Record<string, () => Promise<unknown>> = {
  webhook: () => runWebhookBench(),
  'webhook-memory': () => runWebhookMemoryBench(),
  'redis-cleanup': () => runRedisCleanupBench(),
  'import-cost': () => runImportCostBench(),
  controller: () => runControllerBench(),
  'raycluster-pods': () => runRayClusterPodsBench(),
  rayjob: () => runRayJobBench(),
};

const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !(w in PARTS));
if (unknown.length > 0) {
  process.stderr.write(`unknown bench part(s): ${unknown.join(', ')}; choose from ${Object.keys(PARTS).join(', ')}\n`);
  process.exit(2);
}
for (const name of wanted.length > 0 ? wanted : Object.keys(PARTS)) {
  process.stdout.write(`\n== bench: ${name} (${new Date().toISOString()})\n`);
  await PARTS[name]!();
}
