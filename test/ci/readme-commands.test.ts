// README's promise, held to the letter: its two commands are real (scripts that exist), and CI
// (.ci/run) runs exactly README's test command, part by part, and nothing else that installs anything,
// so CI cannot be green on a path a newcomer's run does not take.
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { REPO_ROOT } from '../../localcluster/binaries.ts';

const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
const ciRun = readFileSync(join(REPO_ROOT, '.ci/run'), 'utf8');
const scripts = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

/** The shell lines of the first ```sh block under "## Develop: the two commands", comments removed. */
export function twoCommands(text: string): string[] {
  const section = text.split(/^## /m).find((s) => s.startsWith('Develop: the two commands'));
  if (section === undefined) throw new Error('README has no "## Develop: the two commands" section');
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error('"## Develop: the two commands" has no ```sh block');
  return block
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l !== '');
}

/** What a shell script runs at its top level: `bash tools/...` lines (up to `||`) and run_tap's commands. */
export function ciCommands(script: string): string[] {
  const out: string[] = [];
  for (const raw of script.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('#')) continue;
    const bash = /^(bash tools\/\S+(?: [^|&;]+?)?)\s*(?:\|\||$)/.exec(line);
    if (bash) out.push(bash[1]!.trim());
    const tap = /^run_tap "[^"]*" (.+)$/.exec(line);
    if (tap) out.push(tap[1]!.trim());
  }
  return out;
}

/** Lines of a script (comments aside) that install or build something by themselves. */
export function installingLines(script: string): string[] {
  const installs =
    /\b(apt-get|apt|dpkg|pip3?|npm (?:ci|install|i)|go (?:build|install|get|mod)|curl|wget|tools\/(?:install|build)-[\w-]+\.sh)\b/;
  return script.split('\n').filter((l) => !l.trim().startsWith('#') && installs.test(l.replace(/\s#\s.*$/, '')));
}

t.test("README's two commands", async (t) => {
  const lines = twoCommands(readme);
  t.same(lines, ['bash tools/setup.sh && npm start', 'bash tools/setup.sh --node && npm test && npm run test:cluster']);
  t.ok(existsSync(join(REPO_ROOT, 'tools/setup.sh')), 'tools/setup.sh exists');
  t.match(
    scripts,
    { start: /\S/, test: /\S/, 'test:cluster': /\S/ },
    'npm start, npm test and npm run test:cluster are package.json scripts',
  );
});

t.test(".ci/run runs README's test command, part by part, and nothing else that installs", async (t) => {
  const testLine = twoCommands(readme).find((l) => l.includes('npm test'))!;
  t.same(
    ciCommands(ciRun),
    testLine.split('&&').map((p) => p.trim()),
  );
  t.same(installingLines(ciRun), [], 'no apt-get, pip, npm ci, go build or tools/install-*.sh of its own');
  t.match(ciRun, /"\$skip" -gt 0/, 'a skipped test fails the run');
});

t.test('the parsers can fail: a CI script that installs Ray by hand, or runs another command, is caught', async (t) => {
  const sneaky =
    'bash tools/setup.sh --node || fail "x"\nray="$(bash tools/install-ray.sh)" || fail\nrun_tap "d" npm test\nrun_tap "n" npm run test:cluster\n';
  t.same(installingLines(sneaky), ['ray="$(bash tools/install-ray.sh)" || fail']);
  t.same(ciCommands('bash tools/setup.sh || fail\nrun_tap "d" npm run test:unit\n'), ['bash tools/setup.sh', 'npm run test:unit']);
  t.throws(() => twoCommands('# x\n## Other\n'), /no "## Develop: the two commands" section/);
});
