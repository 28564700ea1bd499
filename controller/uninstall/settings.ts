// The controller's own settings, read from its Deployment before it is scaled to 0, so `raykeeper uninstall`
// finishes a cleanup exactly as that controller would have (its cleanup image, resources, sweep, budget,
// ENABLE_GCS_FT_REDIS_CLEANUP) and knows which namespaces it watched. Flags given to `raykeeper uninstall`
// win; then the Deployment's; then this process's environment (the chart's hook sets RAYKEEPER_IMAGE and
// ENABLE_GCS_FT_REDIS_CLEANUP like the controller). Pure.
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import type { Container } from '../../kube/model.ts';
import { gcsFtCleanupModule, IMAGE_ENV } from '../gcsft-cleanup/module.ts';

export const GATE_ENV = 'ENABLE_GCS_FT_REDIS_CLEANUP';

export interface ControllerSettings {
  /** The controller's --watch-namespace, or undefined (all namespaces, or no such flag). */
  watchNamespace: string | undefined;
  /** The GCS-FT module's flags (--cleanup-*, --disable-in-process-cleanup) as the controller had them. */
  moduleFlags: Record<string, string | boolean | undefined>;
  /** RAYKEEPER_IMAGE and ENABLE_GCS_FT_REDIS_CLEANUP as plain values of the controller container. */
  env: Record<string, string>;
}

/** The GCS-FT module's flags plus --watch-namespace, as `raykeeper controller` parses them. */
export function cleanupFlagOptions(): ParseArgsOptionsConfig {
  const options: ParseArgsOptionsConfig = {};
  for (const [flag, f] of Object.entries(gcsFtCleanupModule.flags ?? {})) options[flag] = { type: f.type };
  return options;
}

function controllerContainer(deployment: { spec?: unknown }): Container | undefined {
  const containers = ((deployment.spec as { template?: { spec?: { containers?: Container[] } } } | undefined)?.template?.spec?.containers ??
    []) as Container[];
  return containers.find((c) => c.name === 'controller') ?? containers[0];
}

export function controllerSettings(deployment: { spec?: unknown } | undefined): ControllerSettings {
  const container = deployment ? controllerContainer(deployment) : undefined;
  const env: Record<string, string> = {};
  for (const e of container?.env ?? [])
    if ((e.name === IMAGE_ENV || e.name === GATE_ENV) && e.valueFrom === undefined) env[e.name] = e.value ?? '';
  const words = [...(container?.command ?? []), ...(container?.args ?? [])];
  const start = words.indexOf('controller');
  const { values } = parseArgs({
    args: start < 0 ? words : words.slice(start + 1),
    options: { ...cleanupFlagOptions(), 'watch-namespace': { type: 'string' } },
    strict: false,
    allowPositionals: true,
  });
  const moduleFlags: Record<string, string | boolean | undefined> = {};
  for (const flag of Object.keys(cleanupFlagOptions())) {
    const v = values[flag];
    if (typeof v === 'string' || typeof v === 'boolean') moduleFlags[flag] = v;
  }
  const watch = values['watch-namespace'];
  return { watchNamespace: typeof watch === 'string' && watch !== '' ? watch : undefined, moduleFlags, env };
}
