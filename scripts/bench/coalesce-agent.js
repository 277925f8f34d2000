// The subscribers of the coalescing benchmark (scripts/bench-coalesce.js), in
// a process of their own: `ws` clients open and subscribe, then each socket's
// bytes are read raw and only the frame headers looked at, so counting a
// million messages a second costs this process little of the machine the
// gateway shares. Commands over IPC, each answered once done:
//   {cmd: 'open', url, count, channels, first}  open `count` clients, each subscribed to every channel -> {}
//   {cmd: 'counts'}                             -> {messages} text frames received since opened
//   {cmd: 'close'}                              -> {}
// It exits when its parent goes.
import WebSocket from 'ws';

const SOURCES = 40; // source addresses 127.0.<first>.2..: at most 64k ports each
const CONCURRENCY = 200; // handshakes in flight at once

let clients = [];
let messages = 0;

process.on('disconnect', () => process.exit(0));
process.on('message', async ({ cmd, ...args }) => {
  if (cmd === 'open') {
    const addresses = Array.from({ length: args.count }, (_, i) => `127.0.${args.first}.${(i % SOURCES) + 2}`);
    clients = await openAll(args.url, args.channels, addresses);
    process.send({});
  } else if (cmd === 'counts') process.send({ messages });
  else if (cmd === 'close') {
    for (const ws of clients) ws.terminate();
    process.send({});
  }
});

async function openAll(url, channels, addresses) {
  const out = [];
  let next = 0;
  const lane = async () => {
    while (next < addresses.length) out.push(await openOne(url, channels, addresses[next++]));
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  return out;
}

/** Resolves once every subscribe is acknowledged; from then on the socket's frames are counted, not parsed. */
function openOne(url, channels, address) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { localAddress: address });
    let acked = 0;
    ws.on('error', reject);
    ws.on('message', (data) => {
      const frame = JSON.parse(data);
      if (frame.type === 'welcome') {
        const socket = ws._socket;
        socket.cork();
        channels.forEach((channel, i) => ws.send(JSON.stringify({ type: 'subscribe', channel, id: i + 1 })));
        socket.uncork();
      } else if (frame.type === 'ack' && ++acked === channels.length) {
        countRaw(ws._socket);
        resolve(ws);
      } else if (frame.type === 'error') reject(new Error(`${frame.code}: ${frame.message}`));
    });
  });
}

/** Takes the socket from ws and counts the unmasked text frames in its bytes. */
function countRaw(socket) {
  socket.removeAllListeners('data');
  let skip = 0; // payload bytes of the current frame still to come
  let partial = null; // a frame header split across reads
  socket.on('data', (chunk) => {
    const data = partial === null ? chunk : Buffer.concat([partial, chunk]);
    partial = null;
    let at = Math.min(skip, data.length);
    skip -= at;
    while (at < data.length) {
      if (data.length - at < 2) break;
      const opcode = data[at] & 0x0f;
      let length = data[at + 1] & 0x7f;
      let header = 2;
      if (length === 126) {
        if (data.length - at < 4) break;
        length = data.readUInt16BE(at + 2);
        header = 4;
      } else if (length === 127) {
        if (data.length - at < 10) break;
        length = Number(data.readBigUInt64BE(at + 2));
        header = 10;
      }
      if (opcode === 1) messages++;
      const end = at + header + length;
      if (end > data.length) {
        skip = end - data.length;
        at = data.length;
      } else at = end;
    }
    if (at < data.length) partial = data.subarray(at);
  });
}
