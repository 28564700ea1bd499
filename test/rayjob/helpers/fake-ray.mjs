#!/usr/bin/env node
// A stand-in for the `ray` CLI's job commands, speaking the dashboard REST API exactly as
// `ray job status|submit|logs` do, so the submitter Job's real script runs on a machine without Ray.
//   ray job status --address URL ID                      exit 0 if the dashboard knows ID
//   ray job submit --address URL [--no-wait] [opts] --submission-id ID -- ENTRYPOINT...
//   ray job logs   --address URL --follow ID             wait until the job is terminal
// Every invocation is appended to $FAKE_RAY_LOG (one line) when that is set. With
// $FAKE_RAY_LOGS_FAIL_ONCE naming a file that does not exist yet, the first `job logs` creates it and
// exits 1 (a submitter pod killed mid-follow).
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';

const argv = process.argv.slice(2);
if (process.env.FAKE_RAY_LOG) appendFileSync(process.env.FAKE_RAY_LOG, `${argv.join(' ')}\n`);

function die(message, code = 1) {
  process.stderr.write(`fake-ray: ${message}\n`);
  process.exit(code);
}

if (argv[0] !== 'job') die(`unsupported command ${argv.join(' ')}`, 2);
const sub = argv[1];
const rest = argv.slice(2);
const opts = {};
const positional = [];
let entrypoint = [];
for (let i = 0; i < rest.length; i++) {
  const a = rest[i];
  if (a === '--') {
    entrypoint = rest.slice(i + 1);
    break;
  }
  if (a === '--no-wait' || a === '--follow') opts[a.slice(2)] = true;
  else if (a.startsWith('--')) opts[a.slice(2)] = rest[++i];
  else positional.push(a);
}
const address = (opts.address ?? process.env.RAY_ADDRESS ?? '').replace(/\/+$/, '');
if (!address) die('no --address');

// node:http, not fetch: Ray's dashboard refuses POSTs carrying fetch's Sec-Fetch-* headers (as browser traffic).
function call(method, path, body) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers = { Accept: 'application/json' };
    if (payload !== undefined) Object.assign(headers, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) });
    const req = request(`${address}${path}`, { method, headers, timeout: 5000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(payload);
  });
}

async function getJob(id) {
  const res = await call('GET', `/api/jobs/${encodeURIComponent(id)}`);
  if (res.status === 404) return undefined;
  if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
  return JSON.parse(res.text);
}

const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'STOPPED']);

try {
  if (sub === 'status') {
    const job = await getJob(positional[0]);
    if (!job) die(`job ${positional[0]} does not exist`);
    process.stdout.write(`Status for job '${positional[0]}': ${job.status}\n`);
  } else if (sub === 'submit') {
    const body = { entrypoint: entrypoint.join(' '), submission_id: opts['submission-id'] };
    if (opts['runtime-env-json']) body.runtime_env = JSON.parse(opts['runtime-env-json']);
    if (opts['metadata-json']) body.metadata = JSON.parse(opts['metadata-json']);
    if (opts['entrypoint-num-cpus']) body.entrypoint_num_cpus = Number(opts['entrypoint-num-cpus']);
    if (opts['entrypoint-num-gpus']) body.entrypoint_num_gpus = Number(opts['entrypoint-num-gpus']);
    if (opts['entrypoint-resources']) body.entrypoint_resources = JSON.parse(opts['entrypoint-resources']);
    const res = await call('POST', '/api/jobs/', body);
    if (res.status !== 200) die(`submit failed: HTTP ${res.status} ${res.text}`);
    process.stdout.write(`Job '${JSON.parse(res.text).submission_id}' submitted successfully\n`);
  } else if (sub === 'logs') {
    const id = positional[0];
    const failOnce = process.env.FAKE_RAY_LOGS_FAIL_ONCE;
    if (failOnce && !existsSync(failOnce)) {
      writeFileSync(failOnce, 'failed once\n');
      die('killed while following the logs');
    }
    for (;;) {
      const job = await getJob(id);
      if (!job) die(`job ${id} does not exist`);
      if (!opts.follow || TERMINAL.has(job.status)) {
        process.stdout.write(`Job '${id}' ${job.status}\n`);
        break;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  } else {
    die(`unsupported job subcommand ${sub}`, 2);
  }
} catch (err) {
  die(String(err?.message ?? err));
}
