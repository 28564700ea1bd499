// README is a user's guide: at most 300 lines, short sentences, no source file names, and every link
// it makes reaches a file of this tree. Reference, design and benchmark history live in docs/.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import t from 'tap';
import { REPO_ROOT } from '../../localcluster/binaries.ts';

export const README_MAX_LINES = 300;
export const SENTENCE_MAX_WORDS = 40;

/** The README's prose: code blocks, tables, headings and HTML comments left out, one string a paragraph. */
export function proseParagraphs(markdown: string): string[] {
  const withoutCode = markdown.replace(/```[\s\S]*?```/g, '').replace(/<!--[\s\S]*?-->/g, '');
  return withoutCode
    .split(/\n\s*\n/)
    .map((p) =>
      p
        .split('\n')
        .filter((l) => !/^\s*(#|\|)/.test(l))
        .join(' ')
        .trim(),
    )
    .filter((p) => p !== '');
}

/** Sentences of a paragraph, inline code and link targets removed so their dots do not split it. */
export function sentences(paragraph: string): string[] {
  const plain = paragraph
    .replace(/`[^`]*`/g, 'CODE')
    .replace(/\]\([^)]*\)/g, ']')
    .replace(/\b(e\.g|i\.e|etc|vs)\./g, '$1');
  return plain
    .split(/(?<=[.!?:])\s+(?=[A-Z*(`-])|^\s*-\s+/m)
    .map((s) => s.replace(/^\s*-\s+/, '').trim())
    .filter((s) => s !== '');
}

export function wordCount(sentence: string): number {
  return sentence.split(/\s+/).filter((w) => /\w/.test(w)).length;
}

/** Relative link targets (no scheme, no pure anchor), without their #fragment. */
export function relativeLinks(markdown: string): string[] {
  const out: string[] = [];
  for (const m of markdown.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1]!;
    if (/^[a-z]+:/i.test(target) || target.startsWith('#')) continue;
    out.push(target.replace(/#.*$/, ''));
  }
  return out;
}

const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');

t.test('README stays within its budget', async (t) => {
  const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
  t.ok(lines <= README_MAX_LINES, `README.md has ${lines} lines (at most ${README_MAX_LINES}; move reference to docs/)`);
  const long = proseParagraphs(readme)
    .flatMap(sentences)
    .filter((s) => wordCount(s) > SENTENCE_MAX_WORDS);
  t.same(long, [], `no prose sentence over ${SENTENCE_MAX_WORDS} words`);
  const sourceNames = readme.match(/[\w./-]+\.(?:ts|js|go|py)\b/g) ?? [];
  t.same(sourceNames, [], 'no source file names in user text');
  t.match(readme, /GCS \(Global Control Service\)/, 'GCS is expanded');
});

t.test('every relative link in README and docs/ reaches a file', async (t) => {
  const files = ['README.md', ...listDocs(join(REPO_ROOT, 'docs')).map((f) => f.slice(REPO_ROOT.length + 1))];
  for (const file of files) {
    const text = readFileSync(join(REPO_ROOT, file), 'utf8');
    const missing = relativeLinks(text).filter((target) => !existsSync(join(REPO_ROOT, dirname(file), target)));
    t.same(missing, [], `${file}: links resolve`);
  }
});

t.test('the checks can fail', async (t) => {
  t.same(proseParagraphs('# h\n\nOne. Two\nthree.\n\n```sh\nx. y\n```\n| a | b |\n'), ['One. Two three.']);
  t.same(sentences('Run `a.b` now. Then see [x](y.md). Done: Yes.'), ['Run CODE now.', 'Then see [x].', 'Done:', 'Yes.']);
  t.equal(wordCount('one two, three - four'), 4);
  t.same(relativeLinks('[a](docs/x.md#y) [b](https://e.org) [c](#z)'), ['docs/x.md']);
});

function listDocs(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...listDocs(path));
    else if (name.endsWith('.md')) out.push(path);
  }
  return out;
}
