// The node's images without a registry: tools/build-images.sh builds OCI archives (cached by content)
// and prints `name=<ref> archive=<path>` per image; the node imports the archives into containerd.
import { join } from 'node:path';
import { REPO_ROOT } from '../binaries.ts';
import { run } from './host.ts';

export interface LocalImage {
  name: string;
  archive: string;
}

/** The image build script (RAYKEEPER_BUILD_IMAGES overrides it). */
export function buildImagesScript(env: NodeJS.ProcessEnv = process.env): string {
  return env.RAYKEEPER_BUILD_IMAGES || join(REPO_ROOT, 'tools', 'build-images.sh');
}

/** Parses the script's `name=<ref> archive=<path>` lines (other lines are progress). */
export function parseImageLines(text: string): LocalImage[] {
  const images: LocalImage[] = [];
  for (const line of text.split('\n')) {
    const m = /^name=(\S+) archive=(\S+)$/.exec(line.trim());
    if (m) images.push({ name: m[1]!, archive: m[2]! });
  }
  return images;
}

/** Builds (or finds cached) the named images and returns their archives, in build order. */
export async function buildImages(images: string[], env: NodeJS.ProcessEnv = process.env): Promise<LocalImage[]> {
  const out = await run('bash', [buildImagesScript(env), ...images], { timeoutMs: 3_600_000, env });
  const built = parseImageLines(out);
  if (built.length === 0) throw new Error(`${buildImagesScript(env)} ${images.join(' ')} printed no images`);
  return built;
}
