// Admission's side of "one live owner per storage namespace" (issue 45): a RayCluster CREATE, or an UPDATE
// that makes a new claim, is refused when another cluster claims the same storage namespace on the same Redis
// (src/gcsft/claims.ts), naming that cluster. Pure: the webhook passes a lookup over its cache of every
// namespace's RayClusters (webhook/claims.ts).
//
// - 'same' and the other cluster live: refused. Two heads writing one namespace share their GCS state, and
//   deleting either would delete the other's (the controller's cleanup guard keeps the data then).
// - 'same' and the other cluster being deleted: refused too, until it is gone. Its Redis cleanup may be running
//   (it would delete the new cluster's tables) or be skipped because of the new one (which would then start
//   on the deleted cluster's GCS state).
// - 'maybe' (one of the addresses is not known here): admitted with a warning naming the other cluster.
// - An UPDATE that keeps the claim its old object had is admitted: it adds no sharing, and refusing it would
//   block every edit of clusters that share already (admitted while the webhook was down, or two creates at
//   once: each passed before the other was in the cache). The controller's guard is the net for those.
// Without a lookup (`raykeeper mutate` offline: it sees no other cluster) nothing is checked.
import { compareClaims, describeClaimants, storageClaim, type Claimant, type StorageClaim } from '../gcsft/claims.ts';
import type { RayCluster } from '../types.ts';
import { namespaceField } from './update-rules.ts';

/** The other clusters of the cache claiming `claim` (self: the admitted object's "namespace/name"). */
export type ClaimLookup = (claim: StorageClaim, self: string | undefined) => Claimant[];

export type StorageClaimOutcome = { refused: string } | { warnings: string[] };

/**
 * The claim check of an admitted RayCluster. `namespace` is the request's (the object may not carry it on
 * CREATE): short Redis names are relative to it.
 */
export function storageClaimCheck(
  cluster: RayCluster,
  oldCluster: RayCluster | null,
  namespace: string | undefined,
  lookup: ClaimLookup | undefined,
): StorageClaimOutcome {
  if (lookup === undefined) return { warnings: [] };
  const ns = cluster.metadata?.namespace ?? namespace ?? '';
  const withNs = (c: RayCluster): RayCluster => ({ ...c, metadata: { ...c.metadata, namespace: c.metadata?.namespace ?? ns } });
  const claim = storageClaim(withNs(cluster));
  if (claim === undefined) return { warnings: [] };
  const before = oldCluster === null ? undefined : storageClaim(withNs(oldCluster));
  if (before !== undefined && compareClaims(before, claim) === 'same') return { warnings: [] };
  const name = cluster.metadata?.name;
  const claimants = lookup(claim, name ? `${ns}/${name}` : undefined);
  const sure = claimants.filter((c) => c.match === 'same');
  const where = `${namespaceField(cluster)}: storage namespace ${claim.namespaceText} on Redis ${claim.redisText}`;
  if (sure.some((c) => !c.deleting)) {
    return {
      refused: `${where} is already used by ${describeClaimants(sure.filter((c) => !c.deleting))}: two RayClusters writing one storage namespace share their GCS data, and deleting either would delete the other's. Use another storage namespace (or none: a new one is pinned for each cluster)`,
    };
  }
  if (sure.length > 0) {
    return {
      refused: `${where} is still held by ${describeClaimants(sure)}: its Redis cleanup deletes that namespace. Create this RayCluster once it is gone, or use another storage namespace`,
    };
  }
  if (claimants.length > 0) {
    return {
      warnings: [
        `${where} is also the storage namespace of ${describeClaimants(claimants)}; if both write one Redis, they share their GCS data`,
      ],
    };
  }
  return { warnings: [] };
}
