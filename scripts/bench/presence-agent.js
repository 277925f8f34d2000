// One process of the presence benchmark's clients (scripts/bench-presence.js
// forks several, so none holds more than its share of open files): raw `ws`
// clients, each subscribed to one channel, counting the presence_diff frames
// it receives and their bytes. Commands over IPC, each answered once done:
//   {cmd: 'open', url, count, channel, first}  open and subscribe `count` clients -> {ids}
//   {cmd: 'storm'}                             drop every client at once and reconnect them all -> {ids, seconds}
//   {cmd: 'counts'}                            -> {diffs, bytes} diff frames (and their bytes) received since the last counts
// It exits when its parent goes.
import WebSocket from 'ws';

const SOURCES = 40; // source addresses 127.0.0.<first>..: --balance ip spreads them over the workers
const CONCURRENCY = 500; // handshakes in flight at once
const DIFF = Buffer.from('{"type":"presence_diff"');

let url;
let channel;
let clients = []; // {ws, id, address}
const frames = { diffs: 0, bytes: 0 };

process.on('disconnect', () => process.exit(0));
process.on('message', async (message) => {
  const answer = await run(message);
  process.send(answer);
});

async function run({ cmd, ...args }) {
  switch (cmd) {
    case 'open': {
      ({ url, channel } = args);
      const addresses = Array.from({ length: args.count }, (_, i) => `127.0.${args.first}.${(i % SOURCES) + 2}`);
      clients = await openAll(addresses);
      return { ids: clients.map((c) => c.id) };
    }
    case 'storm': {
      const started = performance.now();
      for (const c of clients) c.ws.terminate();
      clients = await openAll(clients.map((c) => c.address));
      return { ids: clients.map((c) => c.id), seconds: (performance.now() - started) / 1000 };
    }
    case 'counts': {
      const counts = { ...frames };
      frames.diffs = frames.bytes = 0;
      return counts;
    }
    default:
      throw new Error(`unknown command ${cmd}`);
  }
}

async function openAll(addresses) {
  const out = new Array(addresses.length);
  let next = 0;
  const lane = async () => {
    while (next < addresses.length) {
      const i = next++;
      out[i] = await openOne(addresses[i]);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  return out;
}

/** Resolves once the client is welcomed and its subscribe acknowledged. */
function openOne(address) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { localAddress: address });
    const client = { ws, id: undefined, address };
    ws.on('error', reject);
    ws.on('message', (data) => {
      // Diffs are most of what comes: counted by their type, not parsed.
      if (data.length > DIFF.length && data.subarray(0, DIFF.length).equals(DIFF)) {
        frames.diffs++;
        frames.bytes += data.length;
        return;
      }
      const frame = JSON.parse(data);
      if (frame.type === 'welcome') {
        client.id = frame.connectionId;
        ws.send(JSON.stringify({ type: 'subscribe', channel, id: 1 }));
      } else if (frame.type === 'ack' && frame.id === 1) resolve(client);
      else if (frame.type === 'error') reject(new Error(`${frame.code}: ${frame.message}`));
    });
  });
}
