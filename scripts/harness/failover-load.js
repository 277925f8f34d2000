// A Sentinel failover under a full publish load, for the topology bench and
// the slow tests alike: the Redis engine alone (no gateway) keeps a fixed
// number of publishes in flight over a few channels, the master is SIGKILLed
// a second in, and the run measures when acknowledged publishing came back
// and which acknowledged publishes the new master lacks.
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { RedisEngine } from '../../lib/engines/redis.js';
import { SentinelGroup, MASTER_NAME } from './redis-topologies.js';
import { eventually } from './gateway.js';

const quiet = { info() {}, warn() {}, error() {} };
// What the sentinels announce, kept for a run that did not come back in time (their hello messages aside).
const SENTINEL_EVENTS = /^[+-](sdown|odown|try-failover|elected-leader|selected-slave|promoted-slave|failover-end|failover-end-for-timeout|switch-master|convert-to-slave|role-change|slave-reconf-done|failover-abort-no-good-slave)$/;
const KILL_AFTER_MS = 1000;
const REFUSED_PAUSE_MS = 10;
const SLOW_MS = 8000; // a run that took longer than this to come back keeps its events // a refused publish is tried again after this, as a client backs off

/** The engine as the gateway builds it, with the given Redis, --redis-wait-replicas and --redis-wait-timeout. */
export function benchEngine(where, waitReplicas, log = quiet, waitTimeout = 100) {
  return new RedisEngine({
    ...where,
    redisMasterName: MASTER_NAME,
    redisWaitReplicas: waitReplicas,
    redisWaitTimeout: waitTimeout,
    historySize: 100000,
    historyTtl: 300,
    maxConnsPerUser: 0,
    presenceTtl: 60,
    presenceMaxClients: 1000,
    joinLeaveInterval: 1000,
    log
  });
}

/**
 * Keeps `inFlight` publishes going for `seconds` over `channels` channels;
 * `tick()` is called with the time before each publish.
 * @returns {Promise<{latencies: number[], acked: {channel, seq, epoch, data, at}[], refusedAt: number[], wall: number}>}
 */
export async function drive(engine, { seconds, inFlight, channels }) {
  await eventually(() => engine.available && engine.subscribing, { timeout: 20000, what: 'engine up' });
  const run = { latencies: [], acked: [], refusedAt: [] };
  const started = performance.now();
  const end = started + seconds * 1000;
  let n = 0;
  await new Promise((resolve) => {
    let open = 0;
    const next = () => {
      if (performance.now() >= end) return open === 0 && resolve();
      const channel = `b${n % channels}`;
      const data = `{"n":${n++}}`;
      const t = performance.now();
      open++;
      engine.publish(
        { channel, data },
        {
          answered(result) {
            open--;
            const now = performance.now();
            if (result === null) {
              run.refusedAt.push(now);
              setTimeout(next, REFUSED_PAUSE_MS);
              return;
            }
            run.latencies.push(now - t);
            run.acked.push({ channel, seq: result.seq, epoch: result.epoch, data, at: now });
            next();
          }
        }
      );
    };
    for (let i = 0; i < inFlight; i++) next();
  });
  run.wall = (performance.now() - started) / 1000;
  return run;
}

/**
 * One failover: a fresh master, two replicas and three sentinels; the load
 * for `seconds`, the master SIGKILLed a second in; `waitTimeout`: --redis-wait-timeout (100).
 * @returns {Promise<object>} secondsToFlowing: from the kill to the first
 *   acknowledgement after the last refusal (null: refusals went on to the
 *   end); ackedLost: acknowledged publishes the new master does not hold
 */
export async function failoverUnderLoad({ waitReplicas, waitTimeout, seconds = 12, inFlight = 64, channels = 16, log }) {
  const group = await SentinelGroup.start();
  const engine = benchEngine({ redisSentinels: group.addresses }, waitReplicas, log, waitTimeout);
  const events = [];
  let killedAt = 0;
  const note = (what) => events.push(`${((performance.now() - killedAt) / 1000).toFixed(2)} ${what}`);
  const watchers = group.sentinels.map((sentinel, i) => {
    const watcher = new Redis(`redis://${sentinel.address}`, { lazyConnect: false, maxRetriesPerRequest: 0 });
    watcher.on('error', () => {});
    watcher.psubscribe('*').catch(() => {});
    watcher.on('pmessage', (pattern, name, text) => SENTINEL_EVENTS.test(name) && note(`sentinel ${i} ${name} ${text}`));
    return watcher;
  });
  for (const [name, connection] of [['commands', engine.redis], ['subscriber', engine.sub.redis]]) {
    connection.on('ready', () => note(`engine ${name} ready on ${connection.stream?.remotePort}`));
    connection.on('close', () => note(`engine ${name} closed`));
    let lastError = '';
    connection.on('error', (err) => err.message !== lastError && note(`engine ${name} error ${(lastError = err.message)}`));
  }
  try {
    const master = await group.master();
    const kill = setTimeout(() => {
      killedAt = performance.now();
      events.length = 0;
      master.signal('SIGKILL');
      note(`master ${master.port} killed`);
    }, KILL_AFTER_MS);
    const run = await drive(engine, { seconds, inFlight, channels });
    clearTimeout(kill);
    const promoted = await group.failedOver(master);
    const { lost, epochsChanged } = await lostAcks(promoted, run.acked, channels);
    const lastRefused = run.refusedAt.at(-1) ?? 0;
    const firstAfter = run.acked.find((a) => a.at > Math.max(killedAt, lastRefused));
    // Back: the first acknowledgement after the outage began (the kill's first refusal).
    const outage = run.refusedAt.find((t) => t > killedAt) ?? killedAt;
    const firstAck = run.acked.find((a) => a.at > outage);
    return {
      waitReplicas,
      secondsToFirstAck: firstAck ? round((firstAck.at - killedAt) / 1000) : null,
      secondsToFlowing: firstAfter ? round((firstAfter.at - killedAt) / 1000) : null,
      secondsOfRun: round(run.wall),
      acked: run.acked.length,
      ackedLost: lost,
      channelsWithNewEpoch: epochsChanged,
      refused: run.refusedAt.length,
      refusedBeforeKill: run.refusedAt.filter((t) => t < killedAt).length,
      refusedLaterThan5s: run.refusedAt.filter((t) => t > killedAt + 5000).length,
      // What happened from the kill on, for a run that was slow to come back.
      events: firstAfter === undefined || firstAfter.at - killedAt > SLOW_MS ? events : undefined
    };
  } finally {
    for (const watcher of watchers) watcher.disconnect();
    engine.stop();
    await group.remove();
  }
}

/** The acknowledged publishes the new master lacks, and the channels whose sequence started over. */
async function lostAcks(promoted, acked, channels) {
  let lost = 0;
  let epochsChanged = 0;
  for (let c = 0; c < channels; c++) {
    const channel = `b${c}`;
    const [epoch] = await promoted.command('HMGET', `gw:{${channel}}:state`, 'e');
    const entries = await promoted.command('XRANGE', `gw:{${channel}}:history`, '-', '+');
    const held = new Map(entries.map(([id, [, data]]) => [id.split('-')[0], data]));
    const mine = acked.filter((a) => a.channel === channel);
    // An ack of another epoch points into a sequence that is gone: lost too.
    for (const a of mine) if (a.epoch !== epoch || held.get(String(a.seq)) !== a.data) lost++;
    if (mine.some((a) => a.epoch !== epoch)) epochsChanged++;
  }
  return { lost, epochsChanged };
}

function round(seconds) {
  return Math.round(seconds * 100) / 100;
}
