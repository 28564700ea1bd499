// The command line every subcommand reads the same way: node:util parseArgs (strict), `-h/--help` prints
// the usage on stdout (exit 0), and a mistake is ONE line on stderr that names it and points to --help
// (exit 2), never Node's text nor the whole usage. `--version` is answered for every command by bin/cli.ts
// before a subcommand loads. parseCommandLine is pure (it returns what to print); finish() prints it.
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';

const HELP = { help: { type: 'boolean', short: 'h' } } as const;

type Config<O extends ParseArgsOptionsConfig> = { args: string[]; options: O & typeof HELP; strict: true; allowPositionals: boolean };

export type CommandLine<O extends ParseArgsOptionsConfig> =
  | { kind: 'run'; values: ReturnType<typeof parseArgs<Config<O>>>['values']; positionals: string[] }
  | { kind: 'exit'; code: 0 | 2; stdout: string; stderr: string };

/** One line for a usage mistake: `raykeeper mutate: unknown option --x (see raykeeper mutate --help)`. */
export function usageError(command: string, problem: string): string {
  return `${command}: ${problem} (see ${command} --help)\n`;
}

/** parseArgs' error in our words, on one line. */
export function argumentProblem(err: unknown): string {
  const e = err as { code?: string; message?: string };
  const quoted = /'([^']*)'/.exec(e.message ?? '')?.[1];
  switch (e.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${(quoted ?? '').split('=', 1)[0]}`;
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument ${JSON.stringify(quoted ?? '')}`;
    default:
      // ERR_PARSE_ARGS_INVALID_OPTION_VALUE: "Option '--out <value>' argument missing", "... does not take an argument"
      return (e.message ?? String(err)).replace(/\s+/g, ' ').replace(/^Option /, 'option ');
  }
}

export function parseCommandLine<const O extends ParseArgsOptionsConfig>(
  command: string,
  argv: string[],
  options: O,
  usage: string,
  settings: { positionals?: boolean } = {},
): CommandLine<O> {
  let parsed: ReturnType<typeof parseArgs<Config<O>>>;
  try {
    parsed = parseArgs<Config<O>>({
      args: argv,
      options: { ...options, ...HELP },
      strict: true,
      allowPositionals: settings.positionals === true,
    });
  } catch (err) {
    return { kind: 'exit', code: 2, stdout: '', stderr: usageError(command, argumentProblem(err)) };
  }
  if ((parsed.values as { help?: boolean }).help === true) return { kind: 'exit', code: 0, stdout: usage, stderr: '' };
  return { kind: 'run', values: parsed.values, positionals: parsed.positionals };
}

/** Writes an `exit` outcome to the process and returns its code. */
export function finish(outcome: { code: number; stdout: string; stderr: string }): number {
  if (outcome.stdout !== '') process.stdout.write(outcome.stdout);
  if (outcome.stderr !== '') process.stderr.write(outcome.stderr);
  return outcome.code;
}
