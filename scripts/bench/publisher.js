// The fan-out scenario's publisher: one WebSocket client that publishes to a
// channel it also subscribes to, and sends the next publish when its own copy
// of the previous one comes back. It joins after every other subscriber, so
// its copy is the last its worker writes: one fan-out at a time, each as fast
// as the server can go. The data carries the send time in the shape the load
// generator reads (lib/loadgen/frames.js), so its agents measure the latency.
import WebSocket from 'ws';
import { once } from 'node:events';
import { dataJson, nowUs, padding } from '../../lib/loadgen/frames.js';
import { NATIVE_CLIENTS } from './clients.js';

const PUBLISHER_ID = 999; // "p" in the data: not one of the load generator's agents
const ECHO_TIMEOUT_MS = 5000;

/**
 * Publishes to `channel` for `seconds`, one fan-out at a time.
 * @param {object} [options.clients] the protocol it speaks (./clients.js): the native one unless given
 * @returns {Promise<{published: number, seconds: number, error?: string}>}
 *   seconds from the first publish to the last one's return
 */
export async function publishInTurn(url, options) {
  const { channel, seconds, messageSize, clients = NATIVE_CLIENTS } = options;
  const way = clients.publisher(url, channel);
  const ws = new WebSocket(way.url, { perMessageDeflate: false });
  const frames = [];
  let wake = () => {};
  ws.on('message', (data) => {
    frames.push(way.read(JSON.parse(data)));
    wake();
  });
  await once(ws, 'open');
  const next = async (accept) => {
    const deadline = performance.now() + ECHO_TIMEOUT_MS;
    for (;;) {
      const frame = frames.shift();
      if (frame?.type === 'error') throw new Error(`publisher got error ${frame.code}: ${frame.message}`);
      if (frame !== undefined && accept(frame)) return;
      if (frame !== undefined) continue;
      if (performance.now() > deadline) throw new Error(`no answer within ${ECHO_TIMEOUT_MS} ms`);
      await new Promise((resolve) => {
        wake = resolve;
        setTimeout(resolve, 100);
      });
    }
  };
  const pad = padding(messageSize);
  let published = 0;
  let started = 0;
  try {
    ws.send(way.subscribe);
    await next((f) => f.type === 'ack');
    started = performance.now();
    const until = started + seconds * 1000;
    while (performance.now() < until) {
      await way.publish(ws, dataJson(nowUs(), PUBLISHER_ID, published, pad));
      await next((f) => f.type === 'message' && f.data.p === PUBLISHER_ID && f.data.n === published);
      published++;
    }
    return { published, seconds: (performance.now() - started) / 1000 };
  } catch (err) {
    return { published, seconds: (performance.now() - started) / 1000, error: err.message };
  } finally {
    ws.terminate();
  }
}
