// The reports `raykeeper mutate --report FORMAT` prints: what the gate found (gate.ts), for a person or a
// CI system. Pure: checks and summary in, text out.
// - text:   one line per finding, `FILE:LINE: Kind ns/name: <finding>` (the line that also goes to stderr
//           when the objects are printed instead);
// - json:   {summary, results: [{file, document, line, item, object, status, findings}]};
// - junit:  JUnit XML (GitLab, Jenkins): a testsuite per file, a testcase per object; a refused or
//           changed object a <failure>, unreadable input an <error>, warnings in <system-out>; it holds to
//           the Jenkins JUnit XSD (test/webhook/reports.test.ts validates it);
// - github: GitHub Actions workflow commands, `::error file=F,line=L,title=T::message` (and ::warning),
//           escaped as @actions/core escapes them, so each finding is an annotation on its file and line.
import type { Check, Finding, FindingType, Summary } from './gate.ts';

export const REPORT_FORMATS = ['text', 'json', 'junit', 'github'] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

/** `deploy/a.yaml:12` (`deploy/a.yaml` when the line is unknown). */
function location(check: Check): string {
  return check.ref.line === undefined ? check.ref.source : `${check.ref.source}:${check.ref.line}`;
}

/** `RayCluster ml/train (items[2])` */
function objectName(check: Check): string | undefined {
  if (check.object === undefined) return check.ref.item;
  return check.ref.item === undefined ? check.object.label : `${check.object.label} (${check.ref.item})`;
}

/** `deploy/a.yaml:12: RayCluster ml/train: denied by the validating webhook: ...` */
export function findingLine(check: Check, finding: Finding): string {
  const name = objectName(check);
  return `${location(check)}: ${name === undefined ? '' : `${name}: `}${finding.text}`;
}

/** The line a person reads at the end: `3 objects in 2 files: 1 denied, 0 errors, 2 warnings`. */
export function summaryLine(summary: Summary): string {
  const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
  const counts = [`${summary.denied} denied`, ...(summary.changed > 0 ? [`${summary.changed} relying on defaults`] : [])];
  counts.push(plural(summary.errors, 'error'), plural(summary.warnings, 'warning'));
  return `${plural(summary.objects, 'object')} in ${plural(summary.files, 'file')}: ${counts.join(', ')} (exit ${summary.exitCode})`;
}

const SEVERITY: readonly FindingType[] = ['error', 'denied', 'changed'];

/** The worst finding of a check: error, denied, changed, else ok (warnings do not fail). */
export function status(check: Check): 'error' | 'denied' | 'changed' | 'ok' {
  for (const type of SEVERITY) if (check.findings.some((f) => f.type === type)) return type as 'error' | 'denied' | 'changed';
  return 'ok';
}

function text(checks: readonly Check[]): string {
  return checks.flatMap((c) => c.findings.map((f) => findingLine(c, f) + '\n')).join('');
}

function json(checks: readonly Check[], summary: Summary): string {
  const results = checks.map((c) => ({
    file: c.ref.source,
    document: c.ref.document,
    line: c.ref.line,
    item: c.ref.item,
    object: c.object,
    status: status(c),
    findings: c.findings.map((f) => ({ type: f.type, message: f.text })),
  }));
  return JSON.stringify({ summary, results }, null, 2) + '\n';
}

/** XML 1.0 text or attribute value: the five entities, and characters XML cannot hold dropped. */
export function xmlEscape(value: string): string {
  return value
    .replace(/[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

function testcase(check: Check): string {
  const name = `${objectName(check) ?? (check.ref.document === undefined ? check.ref.source : `document ${check.ref.document}`)}${check.ref.line === undefined ? '' : ` (line ${check.ref.line})`}`;
  const classname = check.object?.kind === undefined ? 'raykeeper.mutate' : `${check.object.kind}@${check.object.apiVersion ?? ''}`;
  // The XSD's order: error, failure, system-out.
  const element = (tag: string, f: Finding) =>
    `      <${tag} type="${f.type}" message="${xmlEscape(f.text)}">${xmlEscape(findingLine(check, f))}</${tag}>\n`;
  const errors = check.findings.filter((f) => f.type === 'error').map((f) => element('error', f));
  const failures = check.findings.filter((f) => f.type === 'denied' || f.type === 'changed').map((f) => element('failure', f));
  const warnings = check.findings.filter((f) => f.type === 'warning');
  const out =
    warnings.length === 0 ? [] : [`      <system-out>${xmlEscape(warnings.map((f) => findingLine(check, f)).join('\n'))}</system-out>\n`];
  const body = [...errors, ...failures, ...out];
  const open = `    <testcase name="${xmlEscape(name)}" classname="${xmlEscape(classname)}"`;
  return body.length === 0 ? `${open}/>\n` : `${open}>\n${body.join('')}    </testcase>\n`;
}

function counts(checks: readonly Check[]): string {
  const failures = checks.filter((c) => status(c) === 'denied' || status(c) === 'changed').length;
  const errors = checks.filter((c) => status(c) === 'error').length;
  return `tests="${checks.length}" failures="${failures}" errors="${errors}"`;
}

function junit(checks: readonly Check[]): string {
  const files = [...new Set(checks.map((c) => c.ref.source))];
  const suites = files.map((file) => {
    const cases = checks.filter((c) => c.ref.source === file);
    return `  <testsuite name="${xmlEscape(file)}" ${counts(cases)} skipped="0">\n${cases.map(testcase).join('')}  </testsuite>\n`;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="raykeeper mutate" ${counts(checks)}>\n${suites.join('')}</testsuites>\n`;
}

/** @actions/core's escaping of a workflow command's message... */
export function escapeData(value: string): string {
  return value.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

/** ...and of its properties (file, line, title). */
export function escapeProperty(value: string): string {
  return escapeData(value).replace(/:/g, '%3A').replace(/,/g, '%2C');
}

function github(checks: readonly Check[]): string {
  return checks
    .flatMap((c) =>
      c.findings.map((f) => {
        const file = c.ref.source === '(stdin)' ? [] : [`file=${escapeProperty(c.ref.source)}`];
        const properties = [
          ...file,
          ...(c.ref.line === undefined || file.length === 0 ? [] : [`line=${c.ref.line}`]),
          `title=${escapeProperty(`raykeeper mutate: ${objectName(c) ?? f.type}`)}`,
        ];
        return `::${f.type === 'warning' ? 'warning' : 'error'} ${properties.join(',')}::${escapeData(f.text)}\n`;
      }),
    )
    .join('');
}

export function renderReport(format: ReportFormat, checks: readonly Check[], summary: Summary): string {
  switch (format) {
    case 'text':
      return text(checks);
    case 'json':
      return json(checks, summary);
    case 'junit':
      return junit(checks);
    case 'github':
      return github(checks);
  }
}
