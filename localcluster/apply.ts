// Server-side apply of arbitrary manifests (what `kubectl apply --server-side` does), with discovery
// to map a kind to its resource and scope, and a wait for CRDs to become Established.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { APPLY_PATCH, type KubeClient, type ResourceRef } from '../kube/client.ts';
import { sleep } from '../kube/backoff.ts';
import { CUSTOM_RESOURCE_DEFINITIONS } from '../kube/resources.ts';

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

interface ApiResource {
  name: string;
  kind: string;
  namespaced: boolean;
}

/** Kind -> resource lookups, cached per client; refreshed once when a kind is unknown (new CRDs). */
export class Discovery {
  private readonly cache = new Map<string, ApiResource[]>();
  private readonly kube: KubeClient;
  constructor(kube: KubeClient) {
    this.kube = kube;
  }

  async resourceFor(apiVersion: string, kind: string): Promise<ApiResource> {
    for (let attempt = 0; attempt < 2; attempt++) {
      let list = attempt === 0 ? this.cache.get(apiVersion) : undefined;
      if (!list) {
        const path = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
        const body = await this.kube.request<{ resources: ApiResource[] }>('GET', path);
        list = body.resources.filter((r) => !r.name.includes('/'));
        this.cache.set(apiVersion, list);
      }
      const found = list.find((r) => r.kind === kind);
      if (found) return found;
    }
    throw new Error(`the API server does not serve kind ${kind} in ${apiVersion}`);
  }

  /** The object's resource (namespace defaulted for namespaced kinds). */
  async refOf(obj: KubeObject, defaultNamespace = 'default'): Promise<ResourceRef<KubeObject>> {
    const r = await this.resourceFor(obj.apiVersion, obj.kind);
    const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : ['', obj.apiVersion];
    return {
      group,
      version: version!,
      plural: r.name,
      namespace: r.namespaced ? (obj.metadata.namespace ?? defaultNamespace) : undefined,
      name: obj.metadata.name,
    };
  }
}

export interface ApplyOptions {
  fieldManager?: string;
  /** Server-side dry run (dryRun=All): validated and admitted, not stored. */
  dryRun?: boolean;
  force?: boolean;
  discovery?: Discovery;
  /** Collects the server's warnings. */
  warnings?: string[];
}

/** Server-side applies one object; resolves with what the server returned. */
export async function applyObject(kube: KubeClient, obj: KubeObject, options: ApplyOptions = {}): Promise<KubeObject> {
  const discovery = options.discovery ?? new Discovery(kube);
  return kube.patch(await discovery.refOf(obj), obj, APPLY_PATCH, {
    query: { fieldManager: options.fieldManager ?? 'raykeeper', force: options.force ?? true, dryRun: options.dryRun ? 'All' : undefined },
    warnings: options.warnings,
  });
}

/** Parses a multi-document YAML string into objects (empty documents skipped). */
export function parseManifests(text: string): KubeObject[] {
  const out: KubeObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`invalid YAML: ${doc.errors[0]!.message}`);
    const value = doc.toJS() as KubeObject | null;
    if (value && typeof value === 'object') out.push(value);
  }
  return out;
}

/** The objects of every *.yaml / *.yml file in a directory except kustomization.yaml, in name order. */
export async function readManifestDir(dir: string): Promise<KubeObject[]> {
  const files = (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f) && !/^kustomization\.ya?ml$/.test(f)).sort();
  const objects: KubeObject[] = [];
  for (const f of files) objects.push(...parseManifests(await readFile(join(dir, f), 'utf8')));
  return objects;
}

/** Polls until every named CRD has condition Established=True. */
export async function waitForCrdsEstablished(kube: KubeClient, names: string[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pending: string[] = [];
    for (const name of names) {
      const crd = await kube.get(CUSTOM_RESOURCE_DEFINITIONS.at(undefined, name));
      if (!crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) pending.push(name);
    }
    if (pending.length === 0) return;
    if (Date.now() > deadline) throw new Error(`CRDs not Established in time: ${pending.join(', ')}`);
    await sleep(100);
  }
}

/**
 * Applies the CRDs of a directory (server-side apply, so re-running is harmless) and waits until they
 * are Established and their resources are served. Returns the CRD names.
 */
export async function applyCrds(kube: KubeClient, dir: string, timeoutMs = 60_000): Promise<string[]> {
  const crds = (await readManifestDir(dir)).filter((o) => o.kind === 'CustomResourceDefinition');
  if (crds.length === 0) throw new Error(`no CustomResourceDefinition in ${dir}`);
  const discovery = new Discovery(kube);
  for (const crd of crds) await applyObject(kube, crd, { discovery, fieldManager: 'raykeeper' });
  const names = crds.map((c) => c.metadata.name);
  await waitForCrdsEstablished(kube, names, timeoutMs);
  // Established means the API server will serve them; discovery and the watch cache lag a moment
  // behind (a list answers 429 "storage is (re)initializing" meanwhile): wait until a list succeeds.
  const deadline = Date.now() + timeoutMs;
  for (const crd of crds) {
    const spec = crd.spec as { group: string; versions: Array<{ name: string; served: boolean }>; names: { plural: string } };
    for (const v of spec.versions.filter((x) => x.served)) {
      for (;;) {
        try {
          await kube.get({ group: spec.group, version: v.name, plural: spec.names.plural }, { query: { limit: 1 } });
          break;
        } catch (err) {
          if (Date.now() > deadline) throw err;
          await sleep(100);
        }
      }
    }
  }
  return names;
}
