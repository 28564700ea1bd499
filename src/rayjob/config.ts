// The RayJob controller's settings from flags and environment (pure parsing, tested as a table).
import {
  DEFAULT_GRACE_PERIOD_SECONDS,
  DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS,
  DEFAULT_SUBMITTER_FINISHED_TIMEOUT_SECONDS,
  ENV_DELETE_RAYJOB_AFTER_JOB_FINISHES,
  ENV_GRACE_PERIOD_SECONDS,
  ENV_STATUS_CHECK_TIMEOUT_SECONDS,
} from './constants.ts';
import {
  DEFAULT_CONTROLLER_DASHBOARD_TEMPLATE,
  DEFAULT_SUBMITTER_DASHBOARD_TEMPLATE,
  renderDashboardUrl,
  type DashboardTarget,
} from './ids.ts';
import { defaultMachineConfig, type MachineConfig } from './machine/vocabulary.ts';

export const DEFAULT_DASHBOARD_TIMEOUT_SECONDS = 5;

/** `raykeeper controller` flags of the RayJob reconciler, and the env each falls back to. */
export const RAYJOB_FLAGS = {
  'rayjob-dashboard-url-template': {
    env: 'RAYKEEPER_RAYJOB_DASHBOARD_URL_TEMPLATE',
    help: `Ray dashboard URL the controller calls, per cluster; placeholders {service} {cluster} {namespace} {port} (default ${DEFAULT_CONTROLLER_DASHBOARD_TEMPLATE})`,
  },
  'rayjob-dashboard-urls': {
    env: 'RAYKEEPER_RAYJOB_DASHBOARD_URLS',
    help: 'Per-cluster overrides for out-of-cluster runs: "ns/cluster=http://127.0.0.1:8265,ns2/c2=..."',
  },
  'rayjob-dashboard-timeout': {
    env: 'RAYKEEPER_RAYJOB_DASHBOARD_TIMEOUT_SECONDS',
    help: `Timeout of each dashboard request in seconds (default ${DEFAULT_DASHBOARD_TIMEOUT_SECONDS})`,
  },
  'rayjob-submitter-dashboard-url-template': {
    env: 'RAYKEEPER_RAYJOB_SUBMITTER_DASHBOARD_URL_TEMPLATE',
    help: `Dashboard URL the submitter Job uses and status.dashboardURL records (default ${DEFAULT_SUBMITTER_DASHBOARD_TEMPLATE})`,
  },
  'rayjob-submitter-ray-command': {
    env: 'RAYKEEPER_RAYJOB_SUBMITTER_RAY_COMMAND',
    help: 'The `ray` executable in the submitter script (default "ray")',
  },
  'rayjob-submitter-image': {
    env: 'RAYKEEPER_RAYJOB_SUBMITTER_IMAGE',
    help: "Submitter image (default: the RayCluster head container's image)",
  },
  'rayjob-submitter-finished-timeout': {
    env: 'RAYKEEPER_RAYJOB_SUBMITTER_FINISHED_TIMEOUT_SECONDS',
    help: `Seconds a Ray job may stay non-terminal after its submitter finished (default ${DEFAULT_SUBMITTER_FINISHED_TIMEOUT_SECONDS})`,
  },
} as const;

export type RayJobFlagName = keyof typeof RAYJOB_FLAGS;

export interface RayJobSettings {
  machine: MachineConfig;
  /** The dashboard base URL the controller itself calls for a cluster. */
  dashboardUrl: (target: DashboardTarget) => string;
  dashboardTimeoutMs: number;
}

export class SettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SettingsError';
  }
}

function seconds(name: string, raw: string | undefined, fallback: number, allowZero = false): number {
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) {
    throw new SettingsError(`${name} must be a ${allowZero ? 'non-negative' : 'positive'} number of seconds, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** KubeRay reads its grace-period env with Atoi and falls back to the default on anything else. */
function kuberayInt(raw: string | undefined, fallback: number): number {
  if (raw === undefined || !/^\s*-?\d+\s*$/.test(raw)) return fallback;
  return Number.parseInt(raw, 10);
}

export function parseDashboardUrls(raw: string | undefined): Map<string, string> {
  const map = new Map<string, string>();
  if (raw === undefined || raw.trim() === '') return map;
  for (const entry of raw.split(',')) {
    const trimmed = entry.trim();
    if (trimmed === '') continue;
    const eq = trimmed.indexOf('=');
    const key = eq < 0 ? '' : trimmed.slice(0, eq).trim();
    const url = eq < 0 ? '' : trimmed.slice(eq + 1).trim();
    if (!/^[^/\s]+\/[^/\s]+$/.test(key) || !/^https?:\/\//.test(url)) {
      throw new SettingsError(`dashboard URL override ${JSON.stringify(trimmed)} is not "namespace/cluster=http(s)://..."`);
    }
    map.set(key, url.replace(/\/+$/, ''));
  }
  return map;
}

function template(name: string, raw: string | undefined, fallback: string): string {
  const value = raw === undefined || raw.trim() === '' ? fallback : raw.trim();
  if (!/^https?:\/\//.test(value)) throw new SettingsError(`${name} must start with http:// or https://, got ${JSON.stringify(value)}`);
  return value;
}

/**
 * Settings from module flags (strings, as parseArgs gives them) over the environment over defaults.
 * `overrides` replaces machine settings wholesale (tests).
 */
export function rayJobSettings(
  flags: Record<string, string | boolean | undefined>,
  env: Record<string, string | undefined>,
  overrides: Partial<MachineConfig> = {},
): RayJobSettings {
  const get = (name: RayJobFlagName): string | undefined => {
    const value = flags[name];
    if (typeof value === 'string') return value;
    return env[RAYJOB_FLAGS[name].env];
  };
  const controllerTemplate = template(
    'rayjob-dashboard-url-template',
    get('rayjob-dashboard-url-template'),
    DEFAULT_CONTROLLER_DASHBOARD_TEMPLATE,
  );
  const submitterTemplate = template(
    'rayjob-submitter-dashboard-url-template',
    get('rayjob-submitter-dashboard-url-template'),
    DEFAULT_SUBMITTER_DASHBOARD_TEMPLATE,
  );
  const overridesByCluster = parseDashboardUrls(get('rayjob-dashboard-urls'));
  const rayCommand = get('rayjob-submitter-ray-command');
  const image = get('rayjob-submitter-image');
  const submitter: MachineConfig['submitter'] = {};
  if (rayCommand !== undefined && rayCommand.trim() !== '') submitter.rayCommand = rayCommand.trim();
  if (image !== undefined && image.trim() !== '') submitter.image = image.trim();
  const machine = defaultMachineConfig({
    gracePeriodSeconds: kuberayInt(env[ENV_GRACE_PERIOD_SECONDS], DEFAULT_GRACE_PERIOD_SECONDS),
    statusCheckTimeoutSeconds: kuberayInt(env[ENV_STATUS_CHECK_TIMEOUT_SECONDS], DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS),
    submitterFinishedTimeoutSeconds: seconds(
      'rayjob-submitter-finished-timeout',
      get('rayjob-submitter-finished-timeout'),
      DEFAULT_SUBMITTER_FINISHED_TIMEOUT_SECONDS,
    ),
    deleteRayJobAfterJobFinishes: (env[ENV_DELETE_RAYJOB_AFTER_JOB_FINISHES] ?? '').toLowerCase() === 'true',
    submitterDashboardUrl: (target) => renderDashboardUrl(submitterTemplate, target),
    submitter,
    ...overrides,
  });
  return {
    machine,
    dashboardUrl: (target) =>
      overridesByCluster.get(`${target.namespace}/${target.cluster}`) ?? renderDashboardUrl(controllerTemplate, target),
    dashboardTimeoutMs: seconds('rayjob-dashboard-timeout', get('rayjob-dashboard-timeout'), DEFAULT_DASHBOARD_TIMEOUT_SECONDS) * 1000,
  };
}
