// Keeps Pusher apps' channels busy: for each app key given, one connection
// that subscribes to a fresh public channel and unsubscribes from it again,
// `--pairs-per-sec` pairs a second in all (each a channel_occupied and a
// channel_vacated webhook), until SIGTERM; then prints {"pairs": N}.
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

const { values } = parseArgs({ options: { url: { type: 'string' }, keys: { type: 'string' }, 'pairs-per-sec': { type: 'string', default: '100' } } });
const keys = values.keys.split(',');
const every = (1000 * keys.length) / Number(values['pairs-per-sec']);
let pairs = 0;
const sockets = await Promise.all(
  keys.map(
    (key) =>
      new Promise((resolve, reject) => {
        const ws = new WebSocket(`${values.url}/app/${key}?protocol=7`);
        ws.on('message', (data) => String(data).includes('connection_established') && resolve(ws));
        ws.on('error', reject);
      })
  )
);
console.log(JSON.stringify({ ready: sockets.length }));
sockets.forEach((ws, i) => {
  let n = 0;
  setInterval(() => {
    const channel = `churn-${i}-${n++}`;
    ws.send(JSON.stringify({ event: 'pusher:subscribe', data: { channel } }));
    ws.send(JSON.stringify({ event: 'pusher:unsubscribe', data: { channel } }));
    pairs++;
  }, every);
});
process.on('SIGTERM', () => {
  console.log(JSON.stringify({ pairs }));
  process.exit(0);
});
