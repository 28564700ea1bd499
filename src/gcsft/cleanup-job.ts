// The Redis cleanup Job of a deleted GCS-FT RayCluster. Pure: (cluster, config, now) -> Job object.
//
// What the Job gets, and from where (KubeRay builds it from the head pod; we build it from the same
// sources so the cleanup targets exactly the Redis and namespace the head pod used):
// - RAY_external_storage_namespace: the head container's own env entry when the user set one
//   (KubeRay then leaves it alone, so the GCS used it; a Secret / ConfigMap key stays a reference), else
//   options > annotation > UID (src/gcsft/redis-env.ts storageNamespaceSource, the one rule). The Job's
//   annotations and the by-hand command name the same: the value, or the Secret / ConfigMap key.
// - RAY_REDIS_ADDRESS / REDIS_PASSWORD / REDIS_USERNAME: from spec.gcsFaultToleranceOptions when set
//   (`{value}` stays a value, `{valueFrom}` stays a valueFrom: a secretKeyRef is never resolved into
//   the Job), else the head container's env entries, else rayStartParams["redis-password"].
//   The head container's envFrom is carried over too (it may be where the password comes from).
// - TLS env (RAY_REDIS_CA_CERT, RAY_REDIS_CA_PATH, RAY_REDIS_CLIENT_CERT, RAY_REDIS_CLIENT_KEY,
//   RAY_REDIS_SERVER_NAME) from the head container, with the volumes + volumeMounts holding the
//   files those paths point into (only those: no log or data volumes).
// - nodeSelector and tolerations of the head pod (so the Job can land where the cluster ran), but not
//   its affinity (anti-affinity raises GKE Autopilot's minimums: kuberay #4721 / #4763).
// - Our own image running `raykeeper redis-cleanup` (not the Ray image and Ray's private Python API),
//   with `--sweep never` when the cluster's Ray is one whose tables we know (src/redis/sweep.ts),
//   `--sweep auto` when it names none (the cleanup then reads the version the head recorded in Redis),
//   else `--sweep always`: the Job's args say whether it walks the keyspace; and `--command-budget-ms` when
//   the cluster's annotation raykeeper.io/redis-cleanup-command-budget-ms sets one.
// - restartPolicy Never, backoffLimit 0, activeDeadlineSeconds = what is left of the deletion
//   timeout, owner reference to the RayCluster, labels ray.io/cluster + ray.io/node-type=redis-cleanup,
//   requests = limits (Guaranteed QoS, what Autopilot expects), restricted-PSS security context,
//   no service-account token (the Job never talks to Kubernetes).
import { createHash } from 'node:crypto';
import { cleanupEnv, describeReference, envReference, headContainer, storageNamespaceSource, tlsVolumes } from './redis-env.ts';
import {
  ENV_REDIS_ADDRESS,
  ENV_REDIS_PASSWORD,
  ENV_REDIS_USERNAME,
  ENV_STORAGE_NAMESPACE,
  NODE_TYPE_REDIS_CLEANUP,
  RAY_API_VERSION,
  RAY_CLUSTER_LABEL,
  RAY_NODE_TYPE_LABEL,
  REDIS_TLS_ENV,
} from '../names.ts';
import type { RayCluster, RayClusterFtView } from '../types.ts';
import type { BatchJob, EnvVar } from '../../kube/model.ts';
import { parseRedisAddress, redactAddress } from '../redis/address.ts';
import { shellQuote } from '../shell.ts';
import { autoSweep, imageVersionSource, type SweepDecision } from '../redis/sweep.ts';
import { CLEANUP_COMMAND_BUDGET_ANNOTATION, parseCommandBudget } from '../redis/budget.ts';

/** Per-cluster resource annotations (request = limit). Ours win over KubeRay's proposed names. */
export const CLEANUP_CPU_ANNOTATION = 'raykeeper.io/redis-cleanup-cpu';
export const CLEANUP_MEMORY_ANNOTATION = 'raykeeper.io/redis-cleanup-memory';
/** Names proposed upstream (kuberay PR #4763); read as a fallback so clusters written for it work. */
export const KUBERAY_CLEANUP_CPU_ANNOTATION = 'ray.io/gcs-ft-redis-cleanup-job-cpu-resource';
export const KUBERAY_CLEANUP_MEMORY_ANNOTATION = 'ray.io/gcs-ft-redis-cleanup-job-memory-resource';

/**
 * Defaults: 250m CPU / 512Mi, requests = limits. GKE Autopilot (general-purpose class) requires at
 * least 250m CPU for such pods on the versions reported in kuberay #4721 (newer versions accept 50m /
 * 52Mi and raise smaller requests themselves), and a CPU:memory ratio between 1:1 and 1:6.5 vCPU:GiB
 * (250m : 0.5 GiB = 1:2). KubeRay's hard-coded 200m was rejected there.
 */
export const DEFAULT_CLEANUP_CPU = '250m';
export const DEFAULT_CLEANUP_MEMORY = '512Mi';
export const DEFAULT_CLEANUP_IMAGE = 'raykeeper:0.1.0';
export const CLEANUP_CONTAINER_NAME = 'redis-cleanup';
export const CLEANUP_COMMAND = ['raykeeper', 'redis-cleanup'] as const;
export const CLEANUP_UID = 65532;
const JOB_NAME_SUFFIX = '-redis-cleanup';
const DNS_LABEL_MAX = 63;

export interface CleanupJobConfig {
  image: string;
  imagePullPolicy?: string | undefined;
  imagePullSecrets?: string[] | undefined;
  /** Operator-wide defaults (flags); a cluster's annotations override them. */
  cpu: string;
  memory: string;
  serviceAccountName?: string | undefined;
  /** auto (default): skip the keyspace sweep for a Ray whose tables we know; always: sweep every time. */
  sweep?: CleanupSweepPolicy | undefined;
  /** --cleanup-command-budget-ms: every cluster's budget unless its annotation says otherwise (undefined: the cleanup's default). */
  commandBudgetMs?: number | undefined;
}

export const CLEANUP_SWEEP_POLICIES = ['auto', 'always'] as const;
export type CleanupSweepPolicy = (typeof CLEANUP_SWEEP_POLICIES)[number];

export const DEFAULT_CLEANUP_CONFIG: CleanupJobConfig = {
  image: DEFAULT_CLEANUP_IMAGE,
  cpu: DEFAULT_CLEANUP_CPU,
  memory: DEFAULT_CLEANUP_MEMORY,
};

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** True for a valid RFC 1123 DNS label (what Job names must be so their pods' labels stay valid). */
export function isDnsLabel(s: string): boolean {
  return s.length <= DNS_LABEL_MAX && DNS_LABEL.test(s);
}

/**
 * `<cluster>-redis-cleanup` when that is a valid DNS label (<= 63 chars, [a-z0-9-]). Otherwise (long
 * names, dots) the cluster part is sanitised and cut, and an 8-hex hash of the FULL cluster name is
 * added so two long names sharing a prefix never share a Job: `<prefix>-<hash8>-redis-cleanup`, with
 * no '-' left dangling where the cut fell. Deterministic: the same cluster always maps to the same
 * name, which is what makes Job creation idempotent across restarts.
 */
export function cleanupJobName(clusterName: string): string {
  const plain = `${clusterName}${JOB_NAME_SUFFIX}`;
  if (isDnsLabel(plain)) return plain;
  const hash = createHash('sha256').update(clusterName).digest('hex').slice(0, 8);
  const room = DNS_LABEL_MAX - JOB_NAME_SUFFIX.length - hash.length - 1; // 40
  const prefix = clusterName
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, room)
    .replace(/^-+|-+$/g, '');
  return prefix ? `${prefix}-${hash}${JOB_NAME_SUFFIX}` : `${hash}${JOB_NAME_SUFFIX}`;
}

/** Label values are limited to 63 chars: long cluster names are cut + hashed the same way. */
export function clusterLabelValue(clusterName: string): string {
  if (clusterName.length <= DNS_LABEL_MAX) return clusterName;
  const hash = createHash('sha256').update(clusterName).digest('hex').slice(0, 8);
  return `${clusterName.slice(0, DNS_LABEL_MAX - 9).replace(/[-_.]+$/, '')}-${hash}`;
}

const QUANTITY = /^([+-]?[0-9.]+)([eE][-+]?[0-9]+|[numkKMGTPE]i?)?$/;

/** A Kubernetes quantity we accept (positive, syntactically valid). */
export function isQuantity(s: unknown): s is string {
  if (typeof s !== 'string') return false;
  const m = QUANTITY.exec(s.trim());
  return m !== null && Number(m[1]) > 0;
}

/**
 * CPU and memory for the cleanup container: annotation `raykeeper.io/redis-cleanup-cpu` / `-memory`
 * (or KubeRay's proposed `ray.io/gcs-ft-redis-cleanup-job-{cpu,memory}-resource`) > operator flags.
 * An invalid annotation is ignored (the deletion must not block on a typo) and reported in `problems`.
 */
export function cleanupResources(cluster: RayCluster, config: CleanupJobConfig): { cpu: string; memory: string; problems: string[] } {
  const annotations = cluster.metadata?.annotations ?? {};
  const problems: string[] = [];
  const pick = (ours: string, theirs: string, fallback: string): string => {
    for (const key of [ours, theirs]) {
      const v = annotations[key];
      if (v === undefined) continue;
      if (isQuantity(v)) return v.trim();
      problems.push(`annotation ${key}=${JSON.stringify(v)} is not a positive quantity; using ${fallback}`);
    }
    return fallback;
  };
  return {
    cpu: pick(CLEANUP_CPU_ANNOTATION, KUBERAY_CLEANUP_CPU_ANNOTATION, config.cpu),
    memory: pick(CLEANUP_MEMORY_ANNOTATION, KUBERAY_CLEANUP_MEMORY_ANNOTATION, config.memory),
    problems,
  };
}

/**
 * The cleanup's `--sweep`, from the cluster's Ray version (spec.rayVersion, the head image's tag) unless
 * the operator forces the sweep (--cleanup-sweep always).
 */
export function cleanupSweep(cluster: RayCluster, config: Pick<CleanupJobConfig, 'sweep'>): SweepDecision {
  if (config.sweep === 'always') return { mode: 'always', reason: 'forced by --cleanup-sweep always' };
  return autoSweep([{ from: 'spec.rayVersion', version: cluster.spec?.rayVersion }, imageVersionSource(headContainer(cluster)?.image)]);
}

/**
 * The cleanup's command budget: the cluster's annotation, else the operator's --cleanup-command-budget-ms
 * (undefined: the cleanup's default). An invalid annotation is ignored and reported, as a resource
 * annotation is: the deletion must not block on it.
 */
export function cleanupCommandBudget(
  cluster: RayCluster,
  config: Pick<CleanupJobConfig, 'commandBudgetMs'> = {},
): { ms?: number | undefined; problems: string[] } {
  const fallback = config.commandBudgetMs;
  const raw = cluster.metadata?.annotations?.[CLEANUP_COMMAND_BUDGET_ANNOTATION];
  if (raw === undefined) return { ms: fallback, problems: [] };
  const parsed = parseCommandBudget(raw);
  if ('problem' in parsed)
    return {
      ms: fallback,
      problems: [
        `annotation ${CLEANUP_COMMAND_BUDGET_ANNOTATION} ${parsed.problem}; using ${fallback === undefined ? 'the default' : `the operator's ${fallback} ms`}`,
      ],
    };
  return { ms: parsed.ms, problems: [] };
}

/** Seconds left before the deletion timeout (ceil, >= 1) — the Job's activeDeadlineSeconds. */
export function remainingSeconds(deadlineMs: number, nowMs: number): number {
  return Math.max(1, Math.ceil((deadlineMs - nowMs) / 1000));
}

/**
 * `raykeeper redis-cleanup --timeout`: the Job's deadline minus a margin for pod start-up and the
 * report (a third of it, at most 30 s: 300 -> 270, 30 -> 20).
 */
export function cleanupTimeoutSeconds(activeDeadlineSeconds: number): number {
  return Math.max(1, activeDeadlineSeconds - Math.min(30, Math.floor(activeDeadlineSeconds / 3)));
}

/** `auto` (the cleanup reads the version its head recorded) when only the lack of a version makes it sweep. */
export function sweepArg(d: SweepDecision): 'always' | 'never' | 'auto' {
  return d.fromData ? 'auto' : d.mode;
}

function cleanupArgs(cluster: RayCluster, config: CleanupJobConfig, activeDeadlineSeconds: number): string[] {
  const budget = cleanupCommandBudget(cluster, config).ms;
  return [
    '--timeout',
    String(cleanupTimeoutSeconds(activeDeadlineSeconds)),
    ...(budget === undefined ? [] : ['--command-budget-ms', String(budget)]),
    '--sweep',
    sweepArg(cleanupSweep(cluster, config)),
  ];
}

/** The complete Job. `deadlineMs` is deletionTimestamp + timeout (ms epoch). */
export function buildCleanupJob(cluster: RayCluster, config: CleanupJobConfig, deadlineMs: number, nowMs: number): BatchJob {
  const name = cluster.metadata.name ?? '';
  const labels = {
    [RAY_CLUSTER_LABEL]: clusterLabelValue(name),
    [RAY_NODE_TYPE_LABEL]: NODE_TYPE_REDIS_CLEANUP,
    'app.kubernetes.io/created-by': 'raykeeper',
  };
  const { cpu, memory } = cleanupResources(cluster, config);
  const { volumeMounts, volumes } = tlsVolumes(cluster);
  const head = headContainer(cluster);
  const podSpec = cluster.spec?.headGroupSpec?.template?.spec ?? {};
  const activeDeadlineSeconds = remainingSeconds(deadlineMs, nowMs);
  const container: Record<string, unknown> = {
    name: CLEANUP_CONTAINER_NAME,
    image: config.image,
    command: [...CLEANUP_COMMAND],
    // The cleanup's own total deadline (retries included): shorter than the Job's, so it can report
    // its failure before activeDeadlineSeconds kills it.
    args: cleanupArgs(cluster, config, activeDeadlineSeconds),
    env: cleanupEnv(cluster),
    resources: { requests: { cpu, memory }, limits: { cpu, memory } },
    securityContext: {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    },
  };
  if (config.imagePullPolicy) container.imagePullPolicy = config.imagePullPolicy;
  if (Array.isArray(head?.envFrom) && head.envFrom.length > 0) container.envFrom = structuredClone(head.envFrom);
  if (volumeMounts.length > 0) container.volumeMounts = volumeMounts;
  const spec: Record<string, unknown> = {
    restartPolicy: 'Never',
    automountServiceAccountToken: false,
    securityContext: {
      runAsNonRoot: true,
      runAsUser: CLEANUP_UID,
      runAsGroup: CLEANUP_UID,
      fsGroup: CLEANUP_UID,
      seccompProfile: { type: 'RuntimeDefault' },
    },
    containers: [container],
  };
  if (volumes.length > 0) spec.volumes = volumes;
  if (config.serviceAccountName) spec.serviceAccountName = config.serviceAccountName;
  if (config.imagePullSecrets?.length) spec.imagePullSecrets = config.imagePullSecrets.map((n) => ({ name: n }));
  if (podSpec.nodeSelector && typeof podSpec.nodeSelector === 'object') spec.nodeSelector = structuredClone(podSpec.nodeSelector);
  if (Array.isArray(podSpec.tolerations) && podSpec.tolerations.length > 0) spec.tolerations = structuredClone(podSpec.tolerations);
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: cleanupJobName(name),
      namespace: cluster.metadata.namespace,
      labels,
      annotations: { 'raykeeper.io/cluster-name': name, ...storageNamespaceAnnotations(cluster) },
      ownerReferences: [
        {
          apiVersion: RAY_API_VERSION,
          kind: 'RayCluster',
          name,
          uid: cluster.metadata.uid ?? '',
          controller: true,
          // false: the RayCluster's deletion must never wait on this Job (it is created during it).
          blockOwnerDeletion: false,
        },
      ],
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds,
      template: { metadata: { labels }, spec },
    },
  };
}

/** Annotation of the Job: the storage namespace it deletes (a value), when the head's entry is one. */
export const STORAGE_NAMESPACE_ANNOTATION = 'raykeeper.io/storage-namespace';
/** Annotation of the Job: where its pod reads the namespace (`secret NAME key KEY`), when the head's entry is a reference. */
export const STORAGE_NAMESPACE_FROM_ANNOTATION = 'raykeeper.io/storage-namespace-from';

/**
 * What the Job's annotations say it deletes (src/gcsft/redis-env.ts storageNamespaceSource): the namespace,
 * or the Secret / ConfigMap key its env reads it from, as the by-hand command names it. The content of a
 * Secret is never read: the kubelet resolves it into the Job's env only.
 */
export function storageNamespaceAnnotations(cluster: RayClusterFtView): Record<string, string> {
  const source = storageNamespaceSource(cluster);
  if ('value' in source) return { [STORAGE_NAMESPACE_ANNOTATION]: source.value };
  if (source.from === 'head-ref') return { [STORAGE_NAMESPACE_FROM_ANNOTATION]: describeReference(source.ref) };
  return {};
}

/** Job finished? 'complete' / 'failed' (with the reason) / undefined while running. */
export function jobOutcome(job: BatchJob): { outcome: 'complete' } | { outcome: 'failed'; reason: string; message: string } | undefined {
  const conditions = job.status?.conditions ?? [];
  const on = (type: string) => conditions.find((c) => c.type === type && c.status === 'True');
  if (on('Complete') ?? on('SuccessCriteriaMet')) return { outcome: 'complete' };
  const failed = on('Failed') ?? on('FailureTarget');
  if (failed) return { outcome: 'failed', reason: failed.reason ?? 'Failed', message: failed.message ?? '' };
  return undefined;
}

function describeSource(e: EnvVar | undefined): string | undefined {
  if (!e) return undefined;
  if (e.valueFrom === undefined) return e.value;
  const ref = envReference(e);
  return ref ? `<${describeReference(ref)}>` : '<from the head pod env>';
}

/** Whether the address carries a user / password (an unparsable one: assume both). */
function urlCredentials(address: string): { username?: boolean; password?: boolean } {
  if (!address.includes('@')) return {};
  try {
    const parsed = parseRedisAddress(address);
    return { username: parsed.username !== undefined, password: parsed.password !== undefined };
  } catch {
    return { username: true, password: true };
  }
}

/**
 * The command an admin runs by hand to clean what was left behind. Passwords are never shown: a
 * plain-value password is replaced by a placeholder, a Secret is named (name and key).
 */
export function manualCleanupCommand(cluster: RayClusterFtView): string {
  const env = cleanupEnv(cluster);
  const get = (n: string) => env.find((e) => e.name === n);
  const parts: string[] = [];
  // The same entry the Job's env has (storageNamespaceEnv): its value, or the reference it reads.
  const ns = describeSource(get(ENV_STORAGE_NAMESPACE)) ?? '<namespace>';
  parts.push(`${ENV_STORAGE_NAMESPACE}=${shellQuote(ns)}`);
  const address = describeSource(get(ENV_REDIS_ADDRESS));
  // User and password inside the address are dropped from it; placeholders ask for them instead.
  const inUrl = address === undefined ? {} : urlCredentials(address);
  parts.push(`${ENV_REDIS_ADDRESS}=${shellQuote(address === undefined ? '<host:port>' : redactAddress(address, { drop: true }))}`);
  const user = get(ENV_REDIS_USERNAME);
  if (user) parts.push(`${ENV_REDIS_USERNAME}=${shellQuote(describeSource(user) ?? '')}`);
  else if (inUrl.username) parts.push(`${ENV_REDIS_USERNAME}=${shellQuote('<user from the address>')}`);
  const pw = get(ENV_REDIS_PASSWORD);
  if (pw)
    parts.push(`${ENV_REDIS_PASSWORD}=${shellQuote(pw.valueFrom === undefined ? '<password>' : (describeSource(pw) ?? '<password>'))}`);
  else if (inUrl.password) parts.push(`${ENV_REDIS_PASSWORD}=${shellQuote('<password from the address>')}`);
  for (const n of REDIS_TLS_ENV) {
    const e = get(n);
    if (e) parts.push(`${n}=${shellQuote(describeSource(e) ?? '')}`);
  }
  return `${parts.join(' ')} ${CLEANUP_COMMAND.join(' ')}`;
}
