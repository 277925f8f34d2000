// redis: the publish path through each engine, one gateway each, same run
// and same Redis-less machine otherwise. Publish latency: one client, one
// publish at a time, from its send to its own copy's return (p50/p99).
// Throughput: PUBLISHERS clients, each keeping WINDOW publishes in flight on
// its own channel (which it subscribes to), copies returned per second; the
// latency under that load too. Redis runs on this machine: its round trips
// are loopback ones, a lower bound for a Redis across a network. What a
// publish costs Redis under that load: the redis-server process's CPU time
// and its `INFO commandstats` (calls, and the script's own µs) per publish.
// --redis-baseline DIR runs another checkout's gateway on the same Redis
// too (the older tree's figures, side by side in one run).
import { once } from 'node:events';
import path from 'node:path';
import WebSocket from 'ws';
import { withServer } from '../servers.js';
import { cpuUsOf } from '../proc-sampler.js';
import { runResult } from '../result.js';
import { quantile } from '../../../lib/loadgen/quantile.js';
import { subscribeFrame, publishFrame } from '../../../lib/loadgen/frames.js';
import { RedisServer } from '../../harness/redis.js';

const PUBLISHERS = 8;
const WINDOW = 32;
const UP_TIMEOUT_MS = 10000;

export async function redis(opts) {
  const store = await RedisServer.start();
  const trees = [{ label: 'gateway' }];
  if (opts.redisBaseline !== '') trees.push({ label: 'old gateway', script: path.resolve(opts.redisBaseline, 'bin/gateway.js') });
  try {
    const results = [];
    for (const { label, script } of trees) {
      const ran = {};
      for (const engine of ['memory', 'redis']) {
        const flags = ['--workers', String(opts.workers), '--max-publish-rate', '1000000', '--engine', engine, '--redis-url', store.url];
        const variant = `${label} --engine ${engine}`;
        ran[engine] = await withServer('gateway', flags, (server) => measure(server, variant, engine === 'redis' ? store : undefined, opts.redisSeconds), [], script);
        results.push(ran[engine]);
      }
      compare(ran.redis, ran.memory);
    }
    return results;
  } finally {
    await store.remove();
  }
}

/** The Redis run's publishes/s and p99 under load as fractions of the memory engine's, same tree and run. */
function compare(redisRun, memoryRun) {
  if (redisRun.status !== 'ok' || memoryRun.status !== 'ok') return;
  const ratio = (figure) => Math.round((redisRun.figures[figure] / memoryRun.figures[figure]) * 100) / 100;
  redisRun.figures.publishesVsMemory = ratio('publishesPerSec');
  redisRun.figures.loadedP99VsMemory = ratio('loadedP99Ms');
}

/**
 * @param {import('../servers.js').Server} server
 * @param {string} variant
 * @param {RedisServer} [store] the Redis the gateway publishes through, whose cost is read around the load
 * @param {number} seconds
 */
async function measure(server, variant, store, seconds) {
  const deadline = Date.now() + UP_TIMEOUT_MS;
  while ((await server.metric('gateway_engine_up')) !== 1) {
    if (Date.now() > deadline) return runResult({ scenario: 'redis', variant, short: 'the engine did not come up' });
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const alone = await echoes(server.url, 'latency', 1, seconds);
  const before = store && (await redisCost(store));
  const loaded = await Promise.all(Array.from({ length: PUBLISHERS }, (_, i) => echoes(server.url, `load-${i}`, WINDOW, seconds)));
  const after = store && (await redisCost(store));
  const failed = [alone, ...loaded].find((run) => run.error !== undefined);
  if (failed) return runResult({ scenario: 'redis', variant, short: failed.error });
  const loadedUs = loaded.flatMap((run) => run.latenciesUs);
  const figures = {
    publishesPerSec: loadedUs.length / seconds,
    loadedP50Ms: quantile(loadedUs, 0.5) / 1000,
    loadedP99Ms: quantile(loadedUs, 0.99) / 1000,
    latencyP50Ms: quantile(alone.latenciesUs, 0.5) / 1000,
    latencyP99Ms: quantile(alone.latenciesUs, 0.99) / 1000
  };
  if (store) Object.assign(figures, costPerPublish(before, after, loadedUs.length));
  return runResult({ scenario: 'redis', variant, figures });
}

/** @returns {Promise<{cpuUs: number, commands: Map<string, {calls: number, usec: number}>}>} the redis-server's CPU time and command counters now */
export async function redisCost(store) {
  const stats = await store.command('INFO', 'commandstats');
  const commands = new Map();
  for (const [, name, calls, usec] of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) commands.set(name, { calls: Number(calls), usec: Number(usec) });
  return { cpuUs: cpuUsOf(store.proc.pid), commands };
}

/**
 * What Redis spent per publish between two redisCost() readings: its CPU,
 * its commands (each command's calls per publish, and all of them), and the
 * µs its commandstats counted in the publish script (EVALSHA, or EVAL).
 */
export function costPerPublish(before, after, publishes) {
  const calls = {};
  let all = 0;
  let scriptUs = 0;
  for (const [name, now] of after.commands) {
    const was = before.commands.get(name) ?? { calls: 0, usec: 0 };
    const count = now.calls - was.calls;
    // The INFO that read these counts is itself counted: not the publishes' work.
    if (count === 0 || name === 'info') continue;
    calls[name] = Math.round((count / publishes) * 1000) / 1000;
    all += count;
    if (name === 'evalsha' || name === 'eval') scriptUs += now.usec - was.usec;
  }
  return {
    redisCpuUsPerPublish: (after.cpuUs - before.cpuUs) / publishes,
    redisCallsPerPublish: all / publishes,
    redisScriptUsPerPublish: scriptUs / publishes,
    redisCommandsPerPublish: calls
  };
}

/**
 * Publishes on `channel` for `seconds`, `window` publishes in flight.
 * @returns {Promise<{latenciesUs: number[], error?: string}>} one latency per copy returned
 */
export async function echoes(url, channel, window, seconds) {
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
