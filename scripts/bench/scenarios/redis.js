// redis: the publish path through each engine, one gateway each, same run
// and same Redis-less machine otherwise. Publish latency: one client, one
// publish at a time, from its send to its own copy's return (p50/p99).
// Throughput: PUBLISHERS clients, each keeping WINDOW publishes in flight on
// its own channel (which it subscribes to), copies returned per second; the
// latency under that load too. Redis runs on this machine: its round trips
// are loopback ones, a lower bound for a Redis across a network.
import { once } from 'node:events';
import WebSocket from 'ws';
import { withServer } from '../servers.js';
import { runResult } from '../result.js';
import { quantile } from '../../../lib/loadgen/quantile.js';
import { subscribeFrame, publishFrame } from '../../../lib/loadgen/frames.js';
import { RedisServer } from '../../harness/redis.js';

const PUBLISHERS = 8;
const WINDOW = 32;
const UP_TIMEOUT_MS = 10000;

export async function redis(opts) {
  const store = await RedisServer.start();
  try {
    const results = [];
    for (const engine of ['memory', 'redis']) {
      const flags = ['--workers', String(opts.workers), '--max-publish-rate', '1000000', '--engine', engine, '--redis-url', store.url];
      results.push(await withServer('gateway', flags, (server) => measure(server, engine, opts.redisSeconds)));
    }
    return results;
  } finally {
    await store.remove();
  }
}

async function measure(server, engine, seconds) {
  const variant = `gateway --engine ${engine}`;
  const deadline = Date.now() + UP_TIMEOUT_MS;
  while ((await server.metric('gateway_engine_up')) !== 1) {
    if (Date.now() > deadline) return runResult({ scenario: 'redis', variant, short: 'the engine did not come up' });
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const alone = await echoes(server.url, 'latency', 1, seconds);
  const loaded = await Promise.all(Array.from({ length: PUBLISHERS }, (_, i) => echoes(server.url, `load-${i}`, WINDOW, seconds)));
  const failed = [alone, ...loaded].find((run) => run.error !== undefined);
  if (failed) return runResult({ scenario: 'redis', variant, short: failed.error });
  const loadedUs = loaded.flatMap((run) => run.latenciesUs);
  return runResult({
    scenario: 'redis',
    variant,
    figures: {
      publishesPerSec: loadedUs.length / seconds,
      loadedP50Ms: quantile(loadedUs, 0.5) / 1000,
      loadedP99Ms: quantile(loadedUs, 0.99) / 1000,
      latencyP50Ms: quantile(alone.latenciesUs, 0.5) / 1000,
      latencyP99Ms: quantile(alone.latenciesUs, 0.99) / 1000
    }
  });
}

/**
 * Publishes on `channel` for `seconds`, `window` publishes in flight.
 * @returns {Promise<{latenciesUs: number[], error?: string}>} one latency per copy returned
 */
async function echoes(url, channel, window, seconds) {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await once(ws, 'open');
  const latenciesUs = [];
  let inFlight = 0;
  let until = Infinity;
  let error;
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  const send = () => {
    while (inFlight < window && performance.now() < until) {
      inFlight++;
      ws.send(publishFrame(channel, `{"t":${performance.now()}}`));
    }
    if (inFlight === 0) done();
  };
  ws.on('message', (raw) => {
    const frame = JSON.parse(raw);
    if (frame.type === 'error') {
      error ??= `publisher got ${frame.code}: ${frame.message}`;
      inFlight--;
    } else if (frame.type === 'message') {
      latenciesUs.push((performance.now() - frame.data.t) * 1000);
      inFlight--;
    } else if (frame.type !== 'ack' || until !== Infinity) return;
    else until = performance.now() + seconds * 1000; // subscribed: start
    send();
  });
  ws.send(subscribeFrame(channel));
  const timeout = setTimeout(() => {
    error ??= `${inFlight} publishes never came back`;
    done();
  }, (seconds + 10) * 1000);
  await finished;
  clearTimeout(timeout);
  ws.terminate();
  return { latenciesUs, error };
}
