// `npm run bench [-- webhook redis-cleanup import-cost controller rayjob scale]` (flags after the parts go to
// them: `npm run bench -- scale --clusters 1000`): each part prints its figures, beside its baseline
// (measured in the same run on this machine) where it has one. Benchmarks, not tests: nothing here passes or fails on speed.
import { runControllerBench } from './controller.ts';
import { runImportCostBench } from './import-cost.ts';
import { runRayJobBench } from './rayjob.ts';
import { parseRedisCleanupArgs, runRedisCleanupBench } from './redis-cleanup.ts';
import { runRayClusterPodsBench } from './raycluster-pods.ts';
import { parseScaleArgs, runScaleBench } from './scale.ts';
import { runWebhookBench } from './webhook.ts';
import { runWebhookMemoryBench } from './webhook-memory.ts';

const PARTS: Record<string, (flags: string[]) => Promise<unknown>> = {
  webhook: () => runWebhookBench(),
  'webhook-memory': () => runWebhookMemoryBench(),
  // Not strict: the flags of the other parts named in the same run go to this one too.
  'redis-cleanup': (flags) => runRedisCleanupBench(parseRedisCleanupArgs(flags, false)),
  'import-cost': () => runImportCostBench(),
  controller: () => runControllerBench(),
  'raycluster-pods': () => runRayClusterPodsBench(),
  rayjob: () => runRayJobBench(),
  scale: (flags) => runScaleBench(parseScaleArgs(flags)),
};

const args = process.argv.slice(2);
const firstFlag = args.findIndex((a) => a.startsWith('-'));
const wanted = firstFlag < 0 ? args : args.slice(0, firstFlag);
const flags = firstFlag < 0 ? [] : args.slice(firstFlag);
const unknown = wanted.filter((w) => !(w in PARTS));
if (unknown.length > 0) {
  process.stderr.write(`unknown bench part(s): ${unknown.join(', ')}; choose from ${Object.keys(PARTS).join(', ')}\n`);
  process.exit(2);
}
for (const name of wanted.length > 0 ? wanted : Object.keys(PARTS)) {
  process.stdout.write(`\n== bench: ${name} (${new Date().toISOString()})\n`);
  await PARTS[name]!(flags);
}
