// The reconcilers `raykeeper controller` runs. To add one, write a `ReconcilerModule`
// (contract and example: controller/runtime/reconciler.ts) and list it here. Each gets its own work
// queue and workers; all share the informers, the leader Lease, the HTTP endpoints and the metrics.
import type { ReconcilerModule } from './runtime/reconciler.ts';
import { rayClusterModule } from './raycluster/module.ts';
import { rayClusterOperatorModule } from './raycluster/operator-module.ts';
import { rayJobModule } from './rayjob/module.ts';
import { rayCronJobModule } from './raycronjob/module.ts';

export const RECONCILER_MODULES: ReconcilerModule[] = [rayClusterModule, rayClusterOperatorModule, rayJobModule, rayCronJobModule];
