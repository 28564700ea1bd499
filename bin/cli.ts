// The `raykeeper` command: one subcommand a module, each loaded only when it runs.

export interface Subcommand {
  summary: string;
  /** Runs the subcommand with the arguments after its name; resolves to the exit code. */
  load: () => Promise<{ run: (argv: string[]) => Promise<number> }>;
}

export const SUBCOMMANDS: Record<string, Subcommand> = {
  certs: {
    summary: 'generate a CA and the webhook serving certificate (node-forge)',
    load: () => import('../certs/cli.ts'),
  },
  controller: {
    summary: 'run the reconcilers (RayCluster GCS FT cleanup, RayJob) with leader election',
    load: () => import('../controller/cli.ts'),
  },
  dev: {
    summary: 'run everything locally (control plane, Redis, webhook, controller, job runner) until Ctrl-C',
    load: () => import('../dev/cli.ts'),
  },
  mutate: {
    summary: 'print what the webhook would do to manifests or AdmissionReviews (no cluster, no server; --check for CI)',
    load: () => import('../webhook/mutate-cli.ts'),
  },
  'redis-cleanup': {
    summary: 'delete one Ray GCS storage namespace from Redis (the cleanup Job), or --list them',
    load: () => import('../controller/redis-cleanup/cli.ts'),
  },
  uninstall: {
    summary: 'before removing raykeeper: stop its webhook and controller, finish or release every GCS-FT finalizer (Helm pre-delete hook)',
    load: () => import('../controller/uninstall/cli.ts'),
  },
  webhook: {
    summary: 'serve the mutating admission webhook for RayCluster, RayJob and RayCronJob over HTTPS',
    load: () => import('../webhook/cli.ts'),
  },
};

export function usage(): string {
  const width = Math.max(...Object.keys(SUBCOMMANDS).map((n) => n.length));
  const lines = Object.entries(SUBCOMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return [
    'Usage: raykeeper <subcommand> [options]',
    '',
    'Subcommands:',
    ...lines,
    '',
    'Run `raykeeper <subcommand> --help` for its options.',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage() + '\n');
    return name === undefined ? 2 : 0;
  }
  const command = SUBCOMMANDS[name];
  if (command === undefined) {
    process.stderr.write(`raykeeper: unknown subcommand ${JSON.stringify(name)}\n\n${usage()}\n`);
    return 2;
  }
  const module = await command.load();
  return module.run(rest);
}
