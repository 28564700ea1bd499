// Ray token authentication (spec.authOptions.mode: token, Ray >= 2.52) as KubeRay v1.6.2 does it:
// - the Secret `auth_token` lives in: authOptions.secretName when given (the user's, never generated),
//   else one per cluster named CheckName(<cluster>), generated with 32 random bytes (base64), labelled
//   ray.io/cluster and owned by the RayCluster (raycluster_controller.go reconcileAuthSecret);
// - every Ray container (head, workers, the workers' wait-gcs-ready init container, the RayJob
//   submitters) gets RAY_AUTH_MODE=token and RAY_AUTH_TOKEN from that Secret by secretKeyRef
//   (common/pod.go SetContainerTokenAuthEnvVars); an env the user set is kept;
// - the operator's dashboard client sends `x-ray-authorization: Bearer <token>` (dashboard_httpclient.go).
// The token itself only ever travels in the Secret and in that header.
import { randomBytes } from 'node:crypto';
import type { EnvVar, Secret } from '../../kube/model.ts';
import { RAY_CLUSTER_LABEL } from '../names.ts';
import type { RayCluster } from '../types.ts';
import { checkName, ownerReference } from './names.ts';

export const AUTH_TOKEN_SECRET_KEY = 'auth_token';
export const ENV_RAY_AUTH_MODE = 'RAY_AUTH_MODE';
export const ENV_RAY_AUTH_TOKEN = 'RAY_AUTH_TOKEN';
export const AUTH_MODE_TOKEN = 'token';
/** The header KubeRay's dashboard client and rayjob-submitter send (Ray also reads `authorization`). */
export const RAY_AUTHORIZATION_HEADER = 'x-ray-authorization';

export interface AuthOptions {
  mode?: string;
  secretName?: string;
  enableK8sTokenAuth?: boolean;
}

export function authOptions(cluster: RayCluster | null | undefined): AuthOptions | undefined {
  const value = (cluster?.spec as Record<string, unknown> | undefined)?.authOptions;
  return value !== null && typeof value === 'object' ? (value as AuthOptions) : undefined;
}

/** utils.IsAuthEnabled: authOptions.mode is `token` (the CRD's default for a set authOptions is applied by the API server). */
export function isTokenAuth(cluster: RayCluster | null | undefined): boolean {
  return authOptions(cluster)?.mode === AUTH_MODE_TOKEN;
}

/** authOptions.secretName when set and not empty. */
function givenSecretName(cluster: RayCluster): string | undefined {
  const given = authOptions(cluster)?.secretName;
  return typeof given === 'string' && given !== '' ? given : undefined;
}

/** The Secret holding `auth_token`: authOptions.secretName, else the generated one's name. */
export function authSecretName(cluster: RayCluster): string {
  return givenSecretName(cluster) ?? checkName(cluster.metadata.name ?? '');
}

/** Whether the operator generates the Secret (no secretName given). */
export function generatesAuthSecret(cluster: RayCluster): boolean {
  return isTokenAuth(cluster) && givenSecretName(cluster) === undefined;
}

/** generateRandomToken(32): 32 random bytes, base64. */
export function generateAuthToken(): string {
  return randomBytes(32).toString('base64');
}

/** The generated Secret (createAuthSecret): labelled with the cluster, controller-owned by it. */
export function buildAuthSecret(cluster: RayCluster, token: string): Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: authSecretName(cluster),
      namespace: cluster.metadata.namespace,
      labels: { [RAY_CLUSTER_LABEL]: cluster.metadata.name ?? '' },
      ownerReferences: [ownerReference(cluster)],
    },
    stringData: { [AUTH_TOKEN_SECRET_KEY]: token },
  };
}

/** The token a stored Secret holds (data is base64), undefined when the key is absent or empty. */
export function tokenOf(secret: Secret | null | undefined): string | undefined {
  const data = secret?.data?.[AUTH_TOKEN_SECRET_KEY];
  if (typeof data !== 'string' || data === '') return undefined;
  return Buffer.from(data, 'base64').toString('utf8');
}

/**
 * SetContainerTokenAuthEnvVars (token Secret form): `env` plus RAY_AUTH_MODE and RAY_AUTH_TOKEN, each
 * unless already there (a copy; the input is not changed).
 */
export function withTokenAuthEnv(cluster: RayCluster, env: EnvVar[] | undefined): EnvVar[] {
  const out = [...(env ?? [])];
  if (!out.some((e) => e.name === ENV_RAY_AUTH_MODE)) out.push({ name: ENV_RAY_AUTH_MODE, value: AUTH_MODE_TOKEN });
  if (!out.some((e) => e.name === ENV_RAY_AUTH_TOKEN))
    out.push({ name: ENV_RAY_AUTH_TOKEN, valueFrom: { secretKeyRef: { name: authSecretName(cluster), key: AUTH_TOKEN_SECRET_KEY } } });
  return out;
}

/** The request headers of a dashboard call: KubeRay's `x-ray-authorization: Bearer <token>`, none without a token. */
export function authHeaders(token: string | undefined): Record<string, string> {
  return token === undefined ? {} : { [RAY_AUTHORIZATION_HEADER]: `Bearer ${token}` };
}
