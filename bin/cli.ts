// The `raykeeper` command: one subcommand a module, each loaded only when it runs. `--version` is answered
// here for every command; `-h/--help` and mistakes as bin/args.ts says.
import { usageError } from './args.ts';
import { packageVersion, RUNS_FROM_SOURCES } from './package.ts';

export interface Subcommand {
  summary: string;
  /** Runs the subcommand with the arguments after its name; resolves to the exit code. */
  load: () => Promise<{ run: (argv: string[]) => Promise<number> }>;
  /** Runs from a checkout of the repository only: the package leaves its modules out. */
  checkoutOnly?: true;
}

const DEV_MODULE = '../dev/cli.ts';

export const SUBCOMMANDS: Record<string, Subcommand> = {
  webhook: {
    summary: 'serve the mutating and validating admission webhooks over HTTPS',
    load: () => import('../webhook/cli.ts'),
  },
  controller: {
    summary: 'run the reconcilers (GCS-FT Redis cleanup, RayCluster pods, RayJob, RayCronJob) with leader election',
    load: () => import('../controller/cli.ts'),
  },
  mutate: {
    summary: 'what the webhooks would answer for manifests, offline: a CI gate (exit 1: the cluster would refuse one)',
    load: () => import('../webhook/mutate-cli.ts'),
  },
  certs: {
    summary: 'generate a CA and the webhook serving certificate (node-forge)',
    load: () => import('../certs/cli.ts'),
  },
  'redis-cleanup': {
    summary: 'delete one Ray GCS storage namespace from Redis (the cleanup Job), or --list them',
    load: () => import('../controller/redis-cleanup/cli.ts'),
  },
  uninstall: {
    summary: 'before removing raykeeper: stop its webhook and controller, finish or release every GCS-FT finalizer (Helm pre-delete hook)',
    load: () => import('../controller/uninstall/cli.ts'),
  },
  dev: {
    summary: 'run everything locally (control plane, Redis, webhook, controller, job runner) until Ctrl-C; from a checkout',
    // Named through a variable, so the build (tsconfig.build.json) does not follow it: dev/ and the
    // localcluster/ it drives are not compiled into the package.
    load: () => import(DEV_MODULE),
    checkoutOnly: true,
  },
};

export function usage(): string {
  const width = Math.max(...Object.keys(SUBCOMMANDS).map((n) => n.length));
  const lines = Object.entries(SUBCOMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return [
    'Usage: raykeeper <subcommand> [options]',
    '',
    "raykeeper keeps KubeRay's ray.io/v1 RayCluster, RayJob and RayCronJob, with KubeRay's names and behaviour:",
    '- admission webhooks: the mutating one gives a GCS fault-tolerant RayCluster the Redis cleanup finalizer',
    '  and a storage namespace of its own, and defaults RayJobs and RayCronJobs; the validating one refuses',
    "  what KubeRay's rules refuse and the updates that would lose a cluster's GCS data in Redis;",
    "- a controller: the GCS-FT cleanup (the cluster's data deleted from Redis when it is deleted, then the",
    '  finalizer released), RayCluster pods, Services and status, the RayJob state machine, and RayCronJob',
    "  schedules (one RayJob a tick); beside KubeRay's operator (companion mode), the GCS-FT cleanup only.",
    '',
    'Subcommands:',
    ...lines,
    '',
    'Every subcommand takes -h/--help (its options) and --version.',
  ].join('\n');
}

/** `--version` anywhere before a `--`: every command answers it the same way. */
function asksVersion(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes('--version');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage() + '\n');
    return name === undefined ? 2 : 0;
  }
  if (asksVersion(argv)) {
    process.stdout.write(`raykeeper ${packageVersion()}\n`);
    return 0;
  }
  if (name.startsWith('-')) {
    process.stderr.write(usageError('raykeeper', `unknown option ${name.split('=', 1)[0]}`));
    return 2;
  }
  const command = Object.hasOwn(SUBCOMMANDS, name) ? SUBCOMMANDS[name] : undefined;
  if (command === undefined) {
    process.stderr.write(usageError('raykeeper', `unknown subcommand ${JSON.stringify(name)}`));
    return 2;
  }
  if (command.checkoutOnly && !RUNS_FROM_SOURCES) {
    process.stderr.write(
      `raykeeper ${name} runs from a checkout of the raykeeper repository, not from the package: it starts the ` +
        'control plane, Redis and Ray that `bash tools/setup.sh` builds there (then `npm start`; see its README)\n',
    );
    return 2;
  }
  const module = await command.load();
  return module.run(rest);
}
