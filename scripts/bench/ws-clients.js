// Opens and holds WebSocket clients from this process, for the scenarios the
// load generator does not drive (auth frames, TLS): each client is open once
// its welcome came, then the answer to its one request: an auth frame when it
// has a token, else a ping (so every client has sent and received a frame). Source addresses
// 127.0.0.1..16 in turn, so the sticky primary spreads them over the workers.
import WebSocket from 'ws';

const SOURCES = 16;

/**
 * @param {string} url ws:// or wss://
 * @param {number} count clients to open
 * @param {object} [options]
 * @param {(i: number) => string} [options.token] the token client i sends in an auth frame instead of a ping
 * @param {object} [options.wsOptions] for `ws` (e.g. rejectUnauthorized: false)
 * @param {number} [options.concurrency=200] handshakes in flight at once
 * @returns {Promise<{clients: WebSocket[], seconds: number}>} once all are open
 * @throws when one fails: a short run is never a figure
 */
export async function openClients(url, count, { token, wsOptions = {}, concurrency = 200 } = {}) {
  const clients = [];
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      clients.push(await openOne(url, { ...wsOptions, localAddress: `127.0.0.${(i % SOURCES) + 1}` }, token?.(i)));
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  } catch (err) {
    closeClients(clients);
    throw err;
  }
  return { clients, seconds: (performance.now() - started) / 1000 };
}

export function closeClients(clients) {
  for (const ws of clients) ws.terminate();
}

function openOne(url, wsOptions, token) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, wsOptions);
    const fail = (why) => {
      ws.terminate();
      reject(new Error(`client ${wsOptions.localAddress}: ${why}`));
    };
    ws.on('error', (err) => fail(err.message));
    ws.on('close', (code) => fail(`closed ${code}`));
    const request = JSON.stringify(token === undefined ? { type: 'ping', id: 1 } : { type: 'auth', token, id: 1 });
    ws.on('message', (data) => {
      const frame = JSON.parse(data);
      if (frame.type === 'welcome') return ws.send(request);
      if ((frame.type === 'ack' || frame.type === 'pong') && frame.id === 1) {
        ws.removeAllListeners();
        ws.on('error', () => {});
        return resolve(ws);
      }
      fail(`answered ${data}`);
    });
  });
}

/** One client, resolved once its welcome came (the frames after it are the caller's). */
export function welcomed(url) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('message', () => resolve(ws));
    ws.once('error', reject);
  });
}
