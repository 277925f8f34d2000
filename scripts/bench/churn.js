// Steady churn: `count` handshakes with `inFlight` of them under way at a
// time, each opened once an earlier one has closed: connect, the server's
// first frame (the native welcome, Pusher's connection_established), a close
// frame and its answer. What a burst shares among many connections (batched
// IPC, coalesced writes, one wake-up of the loop for many sockets) each of
// these pays alone; connections that come one after another are most of a
// real day. Source addresses 127.0.0.1..16 in turn, as the load generator's.
import WebSocket from 'ws';

const SOURCES = 16;

/**
 * @param {object} o
 * @param {string} o.url
 * @param {number} o.count handshakes in all
 * @param {number} o.inFlight connections opening, open or closing at a time
 * @param {string} [o.expect] text the first frame must hold
 * @returns {Promise<{seconds: number}>} once the last has closed
 * @throws on the first that fails: a short run is never a figure
 */
export async function churn({ url, count, inFlight, expect }) {
  let next = 0;
  const started = performance.now();
  const lane = async () => {
    while (next < count) {
      const i = next++;
      await lifeOf(url, `127.0.0.${(i % SOURCES) + 1}`, expect);
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, lane));
  return { seconds: (performance.now() - started) / 1000 };
}

/** One connection's life, resolved once it has closed. */
function lifeOf(url, localAddress, expect) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { localAddress, perMessageDeflate: false });
    let welcomed = false;
    ws.once('message', (data) => {
      if (expect !== undefined && !String(data).includes(expect)) {
        ws.terminate();
        return void reject(new Error(`churn: the first frame was ${String(data).slice(0, 200)}`));
      }
      welcomed = true;
      ws.close(1000);
    });
    ws.once('error', (err) => reject(new Error(`churn: ${err.message}`)));
    ws.once('close', (code) => (welcomed ? resolve() : reject(new Error(`churn: closed ${code} before the first frame`))));
  });
}
