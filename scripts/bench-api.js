#!/usr/bin/env node
// The server API's figures: one `broadcast` to 1,000 channels (time from the
// call to the last delivery, deliveries/s) against a real gateway under each
// engine. (What idempotency keys cost: scripts/bench-idempotency.js.)
//
//   node scripts/bench-api.js [--rounds 10] [--channels 1000] [--json FILE]
// (--engine redis needs redis-server on PATH: a throwaway one is started.)
import { writeFileSync } from 'node:fs';
import { scriptArgs } from './harness/args.js';
import { startGateway, eventually } from './harness/gateway.js';
import { TestClient } from '../test/helpers/client.js';
import { RedisServer } from './harness/redis.js';
import { quantile } from '../lib/loadgen/quantile.js';

const KEY = 'bench-key';
const { values } = scriptArgs({ usage: '[--rounds 10] [--channels 1000] [--json FILE]', options: { rounds: { type: 'string', default: '10' }, channels: { type: 'string', default: '1000' }, json: { type: 'string' } } });
const rounds = Number(values.rounds);
const count = Number(values.channels);

const results = { memory: await broadcast('memory'), redis: await broadcast('redis') };
for (const engine of ['memory', 'redis']) {
  const r = results[engine];
  console.log(`broadcast to ${count} channels, --engine ${engine}: median ${r.medianMs} ms (p90 ${r.p90Ms} ms), ${r.deliveriesPerSec} deliveries/s`);
}
if (values.json) writeFileSync(values.json, JSON.stringify(results, null, 2) + '\n');

/** Rounds of one broadcast to `count` channels, each held by a subscriber on one connection. */
async function broadcast(engine) {
  const redis = engine === 'redis' ? await RedisServer.start() : undefined;
  const extra = redis ? ['--engine', 'redis', '--redis-url', redis.url] : [];
  const gw = await startGateway(['--workers', '1', '--api-key', KEY, '--max-subscriptions', String(count), ...extra]);
  try {
    const channels = Array.from({ length: count }, (_, i) => `b${i}`);
    const client = await TestClient.connect(gw.url);
    await Promise.all(channels.map((channel) => client.subscribe(channel)));
    // Counted as they arrive, not by searching the frames: the measurement must not cost more than the delivery.
    let received = 0;
    client.ws.on('message', () => received++);
    const times = [];
    for (let round = 1; round <= rounds; round++) {
      received = 0;
      const started = performance.now();
      const res = await fetch(`${gw.http}/api/broadcast`, { method: 'POST', headers: { Authorization: `Bearer ${KEY}` }, body: JSON.stringify({ channels, data: { round } }) });
      if (res.status !== 200) throw new Error(`broadcast answered ${res.status}: ${await res.text()}`);
      await eventually(() => received === count, { interval: 1, what: `round ${round}` });
      times.push(performance.now() - started);
    }
    client.close();
    const median = quantile(times, 0.5);
    return { channels: count, rounds, medianMs: round2(median), p90Ms: round2(quantile(times, 0.9)), deliveriesPerSec: Math.round((count * 1000) / median) };
  } finally {
    await gw.stop();
    await redis?.remove();
  }
}

function round2(x) {
  return Math.round(x * 100) / 100;
}
