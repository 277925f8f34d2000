// channels: what the primary's heap holds per channel: routed channels
// without history (subscribed through real connections), then channels with
// a full history of 128-byte messages, read from the primary's own figures in
// /stats. recovery: the time from a resubscribe with `since` to the last of
// 100 replayed messages, for many clients coming back at once.
import { withServer } from '../servers.js';
import { openClients, closeClients } from '../ws-clients.js';
import { runResult } from '../result.js';
import { ENTRY_OVERHEAD } from '../../../lib/engines/history.js';
import { quantile } from '../../../lib/loadgen/quantile.js';

const HISTORY = 100; // messages per channel, the default --history-size
const MESSAGE = 'x'.repeat(126); // 128 bytes once JSON-quoted
const CONNECTIONS = 20;
const WINDOW = 1000; // requests in flight per connection: a flood beyond what the relay takes is refused, not queued
const DEADLINE_MS = 600000;

export async function channels(opts) {
  const count = opts.channels;
  const flags = ['--workers', String(opts.workers), '--max-subscriptions', String(count), '--max-publish-rate', '1000000000'];
  return withServer('gateway', flags, async (server) => {
    await sleep(opts.settle * 1000 + 1500); // the first figures reach /stats after a second
    const empty = (await server.stats()).primary;
    const { clients } = await openClients(server.url, CONNECTIONS);
    try {
      const started = performance.now();
      await Promise.all(clients.map((ws, c) => requestAll(ws, range(c, count, CONNECTIONS).map((i) => ({ type: 'subscribe', channel: `ch${i}` })))));
      const subscribeS = (performance.now() - started) / 1000;
      const routed = await primaryWhen(server, (p) => p.channels >= count);

      const historyChannels = opts.historyChannels;
      const publishes = [];
      for (let m = 0; m < HISTORY; m++) for (let i = 0; i < historyChannels; i++) publishes.push({ type: 'publish', channel: `h${i}`, data: MESSAGE });
      await requestAll(clients[0], publishes);
      // Every publish is acked by its worker before the primary stores it: wait for the primary's count.
      const entryBytes = historyChannels * HISTORY * (MESSAGE.length + 2 + ENTRY_OVERHEAD);
      const full = await primaryWhen(server, (p) => p.channels >= count + historyChannels && p.historyBytes >= entryBytes);
      const historyHeap = full.heapUsedBytes - routed.heapUsedBytes;
      return [
        runResult({
          scenario: 'channels',
          variant: 'gateway, routed channels without history',
          size: count,
          figures: {
            subscribesPerSec: count / subscribeS,
            primaryHeapPerChannelBytes: (routed.heapUsedBytes - empty.heapUsedBytes) / count,
            primaryRssPerChannelBytes: (routed.rssBytes - empty.rssBytes) / count,
            primaryHeapUsedMiB: routed.heapUsedBytes / 2 ** 20,
            primaryHeapHeadroomMiB: (routed.heapLimitBytes - routed.heapUsedBytes) / 2 ** 20
          }
        }),
        runResult({
          scenario: 'channels',
          variant: `gateway, channels with ${HISTORY} messages of 128 B`,
          size: historyChannels,
          figures: {
            primaryHeapPerChannelBytes: historyHeap / historyChannels,
            primaryHeapPerMessageBytes: historyHeap / (historyChannels * HISTORY),
            historyBytesCounted: full.historyBytes,
            primaryHeapHeadroomMiB: (full.heapLimitBytes - full.heapUsedBytes) / 2 ** 20
          }
        })
      ];
    } finally {
      closeClients(clients);
    }
  });
}

export async function recovery(opts) {
  const count = opts.recoveryClients;
  const flags = ['--workers', String(opts.workers), '--max-publish-rate', '1000000000'];
  return withServer('gateway', flags, async (server) => {
    const first = await openClients(server.url, count);
    const acks = await Promise.all(first.clients.map((ws) => requestAll(ws, [{ type: 'subscribe', channel: 'missed' }])));
    closeClients(first.clients);
    const { clients: [publisher] } = await openClients(server.url, 1);
    await requestAll(publisher, Array.from({ length: HISTORY }, (_, i) => ({ type: 'publish', channel: 'missed', data: i })));
    publisher.terminate();

    const { clients } = await openClients(server.url, count);
    try {
      const since = { seq: 0, epoch: acks[0][0].epoch };
      const started = performance.now();
      const times = await Promise.all(clients.map((ws) => timeRecovery(ws, since)));
      const wallS = (performance.now() - started) / 1000;
      const at = (q) => quantile(times, q);
      return [
        runResult({
          scenario: 'recovery',
          variant: `gateway, ${count} clients resubscribing at once, ${HISTORY} missed each`,
          size: count,
          figures: { p50Ms: at(0.5), p99Ms: at(0.99), maxMs: Math.max(...times), replayedPerSec: (count * HISTORY) / wallS }
        })
      ];
    } finally {
      closeClients(clients);
    }
  });
}

/**
 * Sends the requests (ids from 1), at most WINDOW unanswered at a time, and
 * resolves with their answers once all came. A request refused because the
 * relay is busy (the gateway's backpressure) is sent again a moment later;
 * any other error fails.
 */
function requestAll(ws, frames) {
  return new Promise((resolve, reject) => {
    const answers = new Array(frames.length);
    const queue = frames.map((_, i) => i); // indices still to send, in order
    let next = 0;
    let inFlight = 0;
    let left = frames.length;
    let paused = false;
    const timer = setTimeout(() => done(new Error(`${left} of ${frames.length} requests unanswered`)), DEADLINE_MS);
    const send = () => {
      for (; inFlight < WINDOW && next < queue.length && !paused; inFlight++) {
        const i = queue[next++];
        ws.send(JSON.stringify({ ...frames[i], id: i + 1 }));
      }
    };
    const done = (err) => {
      clearTimeout(timer);
      ws.off('message', onMessage);
      if (err) reject(err);
      else resolve(answers);
    };
    const onMessage = (data) => {
      const frame = JSON.parse(data);
      if (frame.id === undefined) return;
      inFlight--;
      if (frame.type === 'error' && frame.code === 'rate_limited') {
        queue.push(frame.id - 1);
        if (!paused) {
          paused = true;
          setTimeout(() => ((paused = false), send()), 20);
        }
        return;
      }
      if (frame.type === 'error') return done(new Error(`request ${frame.id}: ${frame.code} ${frame.message}`));
      answers[frame.id - 1] = frame;
      if (--left === 0) done();
      else send();
    };
    ws.on('message', onMessage);
    send();
  });
}

/** ms from sending a subscribe with `since` to the last replayed message. */
function timeRecovery(ws, since) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let replayed = 0;
    ws.on('message', (data) => {
      const frame = JSON.parse(data);
      if (frame.type === 'error' || frame.recovered === false) reject(new Error(`not recovered: ${data}`));
      if (frame.type === 'message' && ++replayed === HISTORY) resolve(performance.now() - started);
    });
    ws.send(JSON.stringify({ type: 'subscribe', channel: 'missed', since, id: 1 }));
  });
}

/** Polls /stats until the primary's figures satisfy `ready`, then returns them. */
async function primaryWhen(server, ready) {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const { primary } = await server.stats();
    if (ready(primary)) return primary;
    if (Date.now() > deadline) throw new Error(`the primary never got there: ${JSON.stringify(primary)}`);
    await sleep(500);
  }
}

function range(from, to, step) {
  const out = [];
  for (let i = from; i < to; i += step) out.push(i);
  return out;
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}
