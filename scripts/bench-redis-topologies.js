#!/usr/bin/env node
// The Redis engine on its three topologies, side by side in one run on
// loopback: publish latency (p50/p99, from the engine's publish to its
// answer) and publishes/s with a fixed number in flight, for one Redis,
// Sentinel with --redis-wait-replicas 0 and 1, and a Cluster of three
// masters; then a master SIGKILLed under Sentinel with wait-replicas 0 and 1,
// --repeat times each (./harness/failover-load.js): seconds from its death
// to acknowledged publishing flowing again (no refusal after), and how many
// acknowledged publishes the new master lacks (read back from its history).
//   node scripts/bench-redis-topologies.js [--seconds 5] [--in-flight 64] [--repeat 1] [--failover-only] [--json FILE]
// Redis processes come from the tests' helpers (free ports, temp dirs, removed at the end).
import { scriptArgs } from './harness/args.js';
import { writeFileSync } from 'node:fs';
import { RedisServer } from './harness/redis.js';
import { SentinelGroup, RedisClusterGroup } from './harness/redis-topologies.js';
import { benchEngine, drive, failoverUnderLoad } from './harness/failover-load.js';
import { quantile } from '../lib/loadgen/quantile.js';

const { values } = scriptArgs({
  usage: '[--seconds 5] [--in-flight 64] [--repeat 1] [--failover-only] [--json FILE]',
  options: {
    seconds: { type: 'string', default: '5' },
    'in-flight': { type: 'string', default: '64' },
    repeat: { type: 'string', default: '1' },
    'failover-only': { type: 'boolean', default: false },
    json: { type: 'string' }
  }
});
const SECONDS = Number(values.seconds);
const IN_FLIGHT = Number(values['in-flight']);
const REPEAT = Number(values.repeat);
const CHANNELS = 16;
const FLOWING_WITHIN_S = 10;

function summary(name, run) {
  const at = (q) => (run.latencies.length === 0 ? undefined : quantile(run.latencies, q).toFixed(2));
  return { topology: name, publishesPerS: Math.round(run.latencies.length / run.wall), p50Ms: at(0.5), p99Ms: at(0.99), refused: run.refusedAt.length };
}

async function throughput() {
  const rows = [];
  const single = await RedisServer.start();
  const group = await SentinelGroup.start();
  const cluster = await RedisClusterGroup.start();
  try {
    for (const [name, where, wait] of [
      ['one Redis', { redisUrl: single.url }, 0],
      ['Sentinel, wait-replicas 0', { redisSentinels: group.addresses }, 0],
      ['Sentinel, wait-replicas 1', { redisSentinels: group.addresses }, 1],
      ['Cluster of 3, wait-replicas 0', { redisCluster: cluster.addresses }, 0],
      ['Cluster of 3, wait-replicas 1', { redisCluster: cluster.addresses }, 1]
    ]) {
      const e = benchEngine(where, wait);
      rows.push(summary(name, await drive(e, { seconds: SECONDS, inFlight: IN_FLIGHT, channels: CHANNELS })));
      e.stop();
    }
  } finally {
    await Promise.all([single.remove(), group.remove(), cluster.remove()]);
  }
  return rows;
}

const rows = values['failover-only'] ? [] : await throughput();
if (rows.length > 0) console.table(rows);
const failovers = [];
for (const waitReplicas of [1, 0]) {
  for (let i = 0; i < REPEAT; i++) {
    const run = await failoverUnderLoad({ waitReplicas, inFlight: IN_FLIGHT, channels: CHANNELS });
    failovers.push(run);
    console.log(JSON.stringify(run));
  }
}
console.table(failovers.map(({ events, ...figures }) => figures));
const verdicts = [1, 0].map((waitReplicas) => {
  const runs = failovers.filter((r) => r.waitReplicas === waitReplicas);
  const seconds = runs.map((r) => r.secondsToFlowing);
  return {
    waitReplicas,
    runs: runs.length,
    flowingWithin10s: runs.filter((r) => r.secondsToFlowing !== null && r.secondsToFlowing <= FLOWING_WITHIN_S).length,
    worstSecondsToFlowing: seconds.includes(null) ? null : Math.max(...seconds),
    ackedLost: runs.reduce((sum, r) => sum + r.ackedLost, 0)
  };
});
console.table(verdicts);
const result = { seconds: SECONDS, inFlight: IN_FLIGHT, repeat: REPEAT, rows, failovers, verdicts };
if (values.json) writeFileSync(values.json, JSON.stringify(result, null, 2) + '\n');
