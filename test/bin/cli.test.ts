// The `raykeeper` command's conventions (bin/cli.ts, bin/args.ts): `--version` from every command, a
// mistake on one line naming it and --help (never Node's parseArgs text nor the whole usage), a help that
// says what the webhooks and the controller do.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../localcluster/binaries.ts';
import { main, SUBCOMMANDS, usage } from '../../bin/cli.ts';
import { argumentProblem, parseCommandLine } from '../../bin/args.ts';
import { packageVersion, PACKAGE_ROOT, RUNS_FROM_SOURCES } from '../../bin/package.ts';
import { runCapturing } from '../helpers/capture.ts';

const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const raykeeper = (args: string[]) => runCapturing(main, args);

t.test('--version: the top level and every subcommand, wherever it stands before --', async (t) => {
  const want = `raykeeper ${version}\n`;
  for (const args of [
    ['--version'],
    ...Object.keys(SUBCOMMANDS).map((name) => [name, '--version']),
    ['certs', 'generate', '--out', '/nonexistent', '--version'],
  ]) {
    const res = await raykeeper(args);
    t.same(res, { code: 0, stdout: want, stderr: '' }, args.join(' '));
  }
  const after = await raykeeper(['mutate', '--', '--version']);
  t.not(after.stdout, want, 'after --, it is an argument');
  t.equal(packageVersion(), version);
  t.equal(PACKAGE_ROOT, REPO_ROOT + '/', 'a checkout: package.json beside the folders');
  t.equal(RUNS_FROM_SOURCES, true);
});

t.test('mistakes: one line naming it and --help, exit 2', async (t) => {
  const cases: Array<[string[], string]> = [
    [['--verbose'], 'raykeeper: unknown option --verbose (see raykeeper --help)\n'],
    [['--verbose=1'], 'raykeeper: unknown option --verbose (see raykeeper --help)\n'],
    [['mutat'], 'raykeeper: unknown subcommand "mutat" (see raykeeper --help)\n'],
    [['toString'], 'raykeeper: unknown subcommand "toString" (see raykeeper --help)\n'],
    [['mutate', '--outptu', 'json', 'x.yaml'], 'raykeeper mutate: unknown option --outptu (see raykeeper mutate --help)\n'],
    [['webhook', '--cert'], "raykeeper webhook: option '--cert <value>' argument missing (see raykeeper webhook --help)\n"],
    [['webhook', 'serve'], 'raykeeper webhook: unexpected argument "serve" (see raykeeper webhook --help)\n'],
    [['certs', 'generate', '-x'], 'raykeeper certs generate: unknown option -x (see raykeeper certs generate --help)\n'],
    [['dev', '--kubelets'], 'raykeeper dev: unknown option --kubelets (see raykeeper dev --help)\n'],
  ];
  for (const [args, stderr] of cases) t.same(await raykeeper(args), { code: 2, stdout: '', stderr }, args.join(' '));
});

t.test('help: what the webhooks and the controller do today, every subcommand', async (t) => {
  const text = usage();
  for (const said of [
    /mutating one gives a GCS fault-tolerant RayCluster/,
    /validating one refuses/,
    /GCS-FT cleanup/,
    /RayCluster pods, Services and status/,
    /RayJob state machine/,
    /RayCronJob/,
  ])
    t.match(text, said);
  for (const name of Object.keys(SUBCOMMANDS)) t.match(text, new RegExp(`^  ${name}\\s+\\S`, 'm'), name);
  t.match(text, /-h\/--help .* and --version/);
  const res = await raykeeper(['--help']);
  t.equal(res.code, 0);
  t.equal(res.stdout, text + '\n');
});

t.test('parseCommandLine and argumentProblem', async (t) => {
  const options = { out: { type: 'string' }, quiet: { type: 'boolean' } } as const;
  t.match(parseCommandLine('c', ['--out', 'x', 'p'], options, 'U', { positionals: true }), {
    kind: 'run',
    values: { out: 'x' },
    positionals: ['p'],
  });
  t.same(parseCommandLine('c', ['-h'], options, 'USAGE\n'), { kind: 'exit', code: 0, stdout: 'USAGE\n', stderr: '' });
  t.same(parseCommandLine('c', ['--quiet=yes'], options, 'U'), {
    kind: 'exit',
    code: 2,
    stdout: '',
    stderr: "c: option '--quiet' does not take an argument (see c --help)\n",
  });
  t.equal(argumentProblem(new Error('plain')), 'plain');
});

t.test('through the binary: the Node check passes here, the same answers', async (t) => {
  const bin = join(REPO_ROOT, 'bin', 'raykeeper.js');
  const v = spawnSync(process.execPath, [bin, 'controller', '--version'], { encoding: 'utf8', timeout: 60_000 });
  t.equal(v.status, 0);
  t.equal(v.stdout, `raykeeper ${version}\n`);
  const bad = spawnSync(process.execPath, [bin, '--bogus'], { encoding: 'utf8', timeout: 60_000 });
  t.equal(bad.status, 2);
  t.equal(bad.stderr, 'raykeeper: unknown option --bogus (see raykeeper --help)\n');
  const old = spawnSync(
    process.execPath,
    ['--import', `data:text/javascript,Object.defineProperty(process.versions,'node',{value:'22.18.0'})`, bin, '--version'],
    { encoding: 'utf8', timeout: 60_000 },
  );
  t.equal(old.status, 1, 'Node 22.18: too old for undici');
  t.match(old.stderr, /^raykeeper needs Node\.js 22\.19 or later; this is v\d+/);
});
