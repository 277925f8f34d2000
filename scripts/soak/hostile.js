// A burst of hostile input against the public port: garbage bytes, a frame
// over --max-payload, malformed JSON frames, forged tokens (in an auth frame
// and in a stream's URL), and slowloris
// upgrades that trickle their headers. Each must be refused without harming
// anyone else; the soak's verdict then shows that nothing restarted and
// nothing was lost.
import http from 'node:http';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';

const SLOWLORIS_MS = 15000;
const DRIP_MS = 1000;

/** @returns {Promise<object>} how many of each were sent and how the gateway answered */
export async function hostileBurst({ port, path, maxPayload = 65536 }) {
  const url = `ws://127.0.0.1:${port}${path}`;
  const [garbage, oversized, malformed, forged, forgedStream] = await Promise.all([
    each(20, () => rawGarbage(port)),
    each(5, () => wsSend(url, 'x'.repeat(maxPayload + 1024))),
    each(10, () => wsSend(url, '{"type":"publish","channel":')),
    each(10, () => wsSend(url, JSON.stringify({ type: 'auth', token: forgedToken() }))),
    each(10, () => streamStatus(port, `/sse?channels=c0&token=${forgedToken()}`))
  ]);
  slowloris(port, 10); // not awaited: they trickle on while the run goes on
  return { garbage, oversized, malformed, forged, forgedStream, slowloris: 10 };
}

async function each(n, attempt) {
  const outcomes = await Promise.all(Array.from({ length: n }, attempt));
  const table = {};
  for (const o of outcomes) table[o] = (table[o] ?? 0) + 1;
  return table;
}

/** Random bytes where an HTTP request should be; resolves with how the connection ended. */
function rawGarbage(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.end(randomBytes(512)));
    socket.setTimeout(5000, () => socket.destroy());
    socket.on('data', () => {});
    socket.on('error', () => resolve('error'));
    socket.on('close', () => resolve('closed'));
  });
}

/** One WebSocket frame; resolves with the gateway's answer: its error code, or the close code. */
function wsSend(url, text) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    const timer = setTimeout(() => ws.terminate(), 5000);
    ws.on('open', () => ws.send(text));
    ws.on('message', (data) => {
      const code = errorCode(data);
      if (code === 'welcome') return;
      resolve(`answered ${code}`);
      ws.close();
    });
    ws.on('error', (err) => resolve(err.code ?? 'error'));
    ws.on('close', (code) => {
      clearTimeout(timer);
      resolve(String(code));
    });
  });
}

/** GET a stream; resolves with the response's status (200 under --auth none), and closes it. */
function streamStatus(port, path) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, timeout: 5000 }, (res) => {
      resolve(`HTTP ${res.statusCode}`);
      req.destroy();
    });
    req.on('timeout', () => req.destroy());
    req.on('error', (err) => resolve(err.code ?? 'error'));
  });
}

function errorCode(data) {
  try {
    const frame = JSON.parse(data);
    return frame.code ?? frame.type;
  } catch {
    return 'unparsable';
  }
}

/** A JWT whose signature is random: no gateway may accept it. */
function forgedToken() {
  const part = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ sub: 'intruder', exp: Math.floor(Date.now() / 1000) + 3600 })}.${randomBytes(32).toString('base64url')}`;
}

/** Upgrades that send one header line a second and never finish. */
function slowloris(port, n) {
  for (let i = 0; i < n; i++) {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(`GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\n`));
    const drip = setInterval(() => socket.write(`X-Slow-${Math.random().toString(36).slice(2)}: 1\r\n`), DRIP_MS);
    const end = () => {
      clearInterval(drip);
      socket.destroy();
    };
    socket.on('error', end);
    socket.on('close', end);
    setTimeout(end, SLOWLORIS_MS).unref();
  }
}
