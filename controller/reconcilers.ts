// The reconcilers `raykeeper controller` runs. To add one, write a `ReconcilerModule`
// (contract and example: kube/reconciler.ts) and list it here. Each gets its own work
// queue and workers; all share the informers, the leader Lease, the HTTP endpoints and the metrics.
import type { ReconcilerModule } from '../kube/reconciler.ts';
import { gcsFtCleanupModule } from './gcsft-cleanup/module.ts';
import { rayClusterOperatorModule } from './raycluster/module.ts';
import { rayJobModule } from './rayjob/module.ts';
import { rayCronJobModule } from './raycronjob/module.ts';
import { gcsOrphansModule } from './gcsft-orphans/module.ts';

export const RECONCILER_MODULES: ReconcilerModule[] = [
  gcsFtCleanupModule,
  rayClusterOperatorModule,
  rayJobModule,
  rayCronJobModule,
  gcsOrphansModule,
];
