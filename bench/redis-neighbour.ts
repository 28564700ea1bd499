// The neighbour of the redis-cleanup bench: a separate process (so the cleanup's own CPU in the bench's
// process does not show in its latencies) doing what a live cluster's GCS does to its namespace, an HSET
// then an HGET on `RAY<ns>@ACTOR`, one pair per millisecond, each round trip timed.
// Messages from the parent: 'start' begins a window, 'stop' ends it and answers the window's latencies
// (us, every command). It answers 'ready' once connected.
//   fork('bench/redis-neighbour.ts', [port, ns])
import { Redis } from 'ioredis';

const [port, ns] = process.argv.slice(2);
const r = new Redis({ host: '127.0.0.1', port: Number(port), protocol: 2, disableClientInfo: true, connectionName: 'neighbour' });
r.on('error', () => undefined);
const key = `RAY${ns}@ACTOR`;
let samples: number[] | undefined;

async function loop(): Promise<void> {
  for (let i = 0; ; i++) {
    const field = `actor-${i % 1000}`;
    const t0 = performance.now();
    await r.hset(key, field, 'x'.repeat(200));
    const t1 = performance.now();
    await r.hget(key, field);
    const t2 = performance.now();
    samples?.push(Math.round((t1 - t0) * 1000), Math.round((t2 - t1) * 1000));
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

process.on('message', (m) => {
  if (m === 'start') samples = [];
  else if (m === 'stop') {
    process.send?.({ samples: samples ?? [] });
    samples = undefined;
  } else if (m === 'exit') {
    r.disconnect();
    process.exit(0);
  }
});
await r.ping();
process.send?.('ready');
void loop();
