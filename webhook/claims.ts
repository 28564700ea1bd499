// The webhook's view of every namespace's RayClusters, for the storage-namespace claim check at admission
// (issue 45, src/admission/storage-claims.ts): one informer (LIST + WATCH of rayclusters, all namespaces) whose
// cache keeps only what the check reads of each cluster (its name, UID, whether it is being deleted and its
// claim, src/gcsft/claims.ts: a few hundred bytes, not the object), and the index over the claims.
//
// Why a cache and not a LIST per request: a LIST returns the whole collection on every CREATE, so admission
// would cost what the collection weighs. Measured on the local kube-apiserver with 1,000 RayClusters of the
// GCS-FT sample (with kubectl's last-applied copy): 3.0 MB of JSON, 0.15-0.3 s per LIST and +12 MB of heap
// while one is parsed (the webhook's heap is capped at 112 MiB, its timeout is 5 s; at 5,000 clusters a few
// concurrent CREATEs would exhaust both). The cache: 1.0 MB of heap for those 1,000, synced in 0.2 s, then a
// watch event per change; a lookup is one map read (well under 1 us).
//
// The cost of a cache is its lag: a cluster created a moment ago may not be in it yet (two CREATEs at once are
// both admitted). The controller's cleanup guard (src/gcsft/decide.ts) is the safety net for that; admission
// is the early refusal. Until the first LIST is in, /readyz answers 503 (the API server then calls another
// replica, or failurePolicy Ignore applies) and nothing is checked. A LIST the API server forbids (no RBAC:
// the chart under controller.watchNamespaces grants none) does not hold readiness: the webhook serves without
// the check, logs why, and keeps retrying (RBAC created with the pod may take a moment to count).
import type { Registry } from 'prom-client';
import { isForbidden, KubeClient } from '../kube/client.ts';
import { InformerFactory } from '../kube/informer.ts';
import type { KubeCredentials } from '../kube/kubeconfig.ts';
import type { ApiObject } from '../kube/model.ts';
import type { Projection } from '../kube/resources.ts';
import type { ClaimLookup } from '../src/admission/storage-claims.ts';
import { ClaimIndex, claimEntry, watchClaims, type ClaimEntry } from '../src/gcsft/claims.ts';
import { errorMessage } from '../src/errors.ts';
import type { Logger } from '../kube/logger.ts';
import { sharedGauge } from '../kube/metrics.ts';
import { RAYCLUSTERS, type RayCluster } from '../src/types.ts';

/** What the cache keeps of a RayCluster. */
interface ClaimProjection extends ApiObject {
  claim?: ClaimEntry;
}

/** The projection: metadata the informer needs, and the claim computed from the whole object. */
export function claimProjection(obj: RayCluster): ClaimProjection {
  const m = obj.metadata ?? {};
  const projection: ClaimProjection = {
    metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion },
  };
  // The transform runs inside the watch's data handler: an exception there would end the process, and
  // inside every LIST (the cache would never sync). An object it cannot read claims nothing.
  try {
    const entry = claimEntry(obj);
    if (entry) projection.claim = entry;
  } catch {
    // no claim
  }
  return projection;
}

const CLAIMS: Projection<RayCluster, ClaimProjection> = { id: 'storage-claims', transform: claimProjection };

export interface ClaimsCache {
  /** The lookup admission uses; undefined until the first LIST is in (nothing is checked then). */
  lookup(): ClaimLookup | undefined;
  synced(): boolean;
  /** listing: not ready yet; forbidden: the LIST is refused (403), serving without the check. */
  state(): 'synced' | 'listing' | 'forbidden';
  /** Resolves true once the first LIST is in (false if `signal` aborts first). */
  waitForSync(signal?: AbortSignal): Promise<boolean>;
  stop(): Promise<void>;
}

export function startClaimsCache(options: { kubeConfig: KubeCredentials; logger: Logger; registry?: Registry }): ClaimsCache {
  const kube = new KubeClient(options.kubeConfig);
  const factory = new InformerFactory(kube);
  const informer = factory.get({ ...RAYCLUSTERS, namespace: '' }, CLAIMS);
  const index = new ClaimIndex();
  watchClaims(informer, index, (p) => p.claim);
  let lastError = '';
  let forbidden = false;
  informer.onError((err) => {
    const message = errorMessage(err);
    forbidden = isForbidden(err);
    if (message !== lastError)
      options.logger.error(
        { err: message },
        forbidden
          ? 'may not list RayClusters in every namespace: storage namespaces are not checked at admission (RBAC: list, watch rayclusters)'
          : 'RayCluster cache for the storage-namespace check: list/watch failed',
      );
    lastError = message;
  });
  const lookup: ClaimLookup = (claim, self) => index.claimants(claim, self);
  sharedGauge(options.registry, {
    name: 'raykeeper_webhook_storage_claims_synced',
    help: 'Whether the RayCluster cache of the storage-namespace check has listed once (1) or not yet (0): until then nothing is checked, and the webhook is not ready unless the list is forbidden.',
    collect() {
      this.set(informer.hasSynced() ? 1 : 0);
    },
  });
  sharedGauge(options.registry, {
    name: 'raykeeper_webhook_storage_claims',
    help: 'RayClusters in the webhook cache that claim a storage namespace (GCS FT with Redis).',
    collect() {
      this.set(index.size);
    },
  });
  factory.start();
  void informer.waitForSync().then((ok) => {
    if (ok) options.logger.info({ clusters: informer.size, claims: index.size }, 'RayCluster cache for the storage-namespace check synced');
  });
  return {
    lookup: () => (informer.hasSynced() ? lookup : undefined),
    synced: () => informer.hasSynced(),
    state: () => (informer.hasSynced() ? 'synced' : forbidden ? 'forbidden' : 'listing'),
    waitForSync: (signal) => informer.waitForSync(signal),
    async stop() {
      await factory.stop();
      kube.close();
    },
  };
}
