#!/usr/bin/env node
// The Redis engine on its three topologies, side by side in one run on
// loopback: publish latency (p50/p99, from the engine's publish to its
// answer) and publishes/s with a fixed number in flight, for one Redis,
// Sentinel with --redis-wait-replicas 0 and 1, and a Cluster of three
// masters; then a master SIGKILLed under Sentinel with wait-replicas 0 and 1:
// seconds from its death to publishes answered again, and how many
// acknowledged publishes the new master lacks (read back from its history).
//   node scripts/bench-redis-topologies.js [--seconds 5] [--in-flight 64]
// Redis processes come from the tests' helpers (free ports, temp dirs, removed at the end).
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { RedisEngine } from '../lib/engines/redis.js';
import { RedisServer } from './harness/redis.js';
import { SentinelGroup, RedisClusterGroup, MASTER_NAME } from './harness/redis-topologies.js';
import { eventually } from './harness/gateway.js';
import { quantile } from '../lib/loadgen/quantile.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, 'in-flight': { type: 'string', default: '64' } } });
const SECONDS = Number(values.seconds);
const IN_FLIGHT = Number(values['in-flight']);
const CHANNELS = 16;
const quiet = { info() {}, warn() {}, error() {} };

function engine(where, waitReplicas) {
  return new RedisEngine({
    ...where,
    redisMasterName: MASTER_NAME,
    redisWaitReplicas: waitReplicas,
    redisWaitTimeout: 100,
    historySize: 100000,
    historyTtl: 300,
    maxConnsPerUser: 0,
    log: quiet
  });
}

/**
 * Keeps IN_FLIGHT publishes going for `seconds`.
 * @returns {{latencies: number[], acked: {channel, seq, epoch, data, at}[], refused: number, lastRefusedAt: number, wall: number}}
 */
async function drive(e, seconds) {
  await eventually(() => e.available && e.sub.ready, { timeout: 20000, what: 'engine up' });
  const run = { latencies: [], acked: [], refused: 0, lastRefusedAt: 0 };
  const started = performance.now();
  const end = started + seconds * 1000;
  let n = 0;
  await new Promise((resolve) => {
    let open = 0;
    const next = () => {
      if (performance.now() >= end) return open === 0 && resolve();
      const channel = `b${n % CHANNELS}`;
      const data = `{"n":${n++}}`;
      const t = performance.now();
      open++;
      e.publish(channel, data, (seq, epoch) => {
        open--;
        const now = performance.now();
        if (seq === null) {
          run.refused++;
          run.lastRefusedAt = now;
        } else {
          run.latencies.push(now - t);
          run.acked.push({ channel, seq, epoch, data, at: now });
        }
        // A refused publish is retried after a pause, as a client would.
        if (seq === null) setTimeout(next, 10);
        else next();
      });
    };
    for (let i = 0; i < IN_FLIGHT; i++) next();
  });
  run.wall = (performance.now() - started) / 1000;
  return run;
}

function summary(name, run) {
  const at = (q) => (run.latencies.length === 0 ? undefined : quantile(run.latencies, q).toFixed(2));
  return { topology: name, publishesPerS: Math.round(run.latencies.length / run.wall), p50Ms: at(0.5), p99Ms: at(0.99), refused: run.refused };
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
      const e = engine(where, wait);
      rows.push(summary(name, await drive(e, SECONDS)));
      e.stop();
    }
  } finally {
    await Promise.all([single.remove(), group.remove(), cluster.remove()]);
  }
  return rows;
}

/** SIGKILL the master a second in; count from its death to the first publish answered after it. */
async function failover(wait) {
  const group = await SentinelGroup.start();
  const e = engine({ redisSentinels: group.addresses }, wait);
  try {
    let killedAt = 0;
    const master = await group.master();
    const kill = setTimeout(() => {
      killedAt = performance.now();
      master.signal('SIGKILL');
    }, 1000);
    const run = await drive(e, 12);
    clearTimeout(kill);
    // What the new master holds, per channel: the acked publishes it lacks were lost.
    const promoted = await group.master();
    let lost = 0;
    const epochsChanged = new Set();
    for (let c = 0; c < CHANNELS; c++) {
      const channel = `b${c}`;
      const state = await promoted.command('HMGET', `gw:{${channel}}:state`, 'e');
      // A sequence the lost tail's seqs were given again: those acks point at other data now.
      const entries = await promoted.command('XRANGE', `gw:{${channel}}:history`, '-', '+');
      const held = new Map(entries.map(([id, [, data]]) => [id.split('-')[0], data]));
      for (const a of run.acked.filter((x) => x.channel === channel && x.epoch === state[0])) if (held.get(String(a.seq)) !== a.data) lost++;
      if (run.acked.some((x) => x.channel === channel && x.epoch !== state[0])) epochsChanged.add(channel);
    }
    // Flowing again: the first ack after the outage's last refusal.
    const firstAfter = run.acked.find((a) => a.at > Math.max(killedAt, run.lastRefusedAt));
    return {
      waitReplicas: wait,
      secondsToFlowing: firstAfter ? ((firstAfter.at - killedAt) / 1000).toFixed(2) : 'never',
      acked: run.acked.length,
      ackedLost: lost,
      channelsWithNewEpoch: epochsChanged.size,
      refused: run.refused
    };
  } finally {
    e.stop();
    await group.remove();
  }
}

const rows = await throughput();
console.table(rows);
const failovers = [await failover(1), await failover(0)];
console.table(failovers);
console.log(JSON.stringify({ seconds: SECONDS, inFlight: IN_FLIGHT, rows, failovers }));
