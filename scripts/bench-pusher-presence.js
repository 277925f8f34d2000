#!/usr/bin/env node
// Pusher at scale, loopback only, bounded in clients and time; starts and
// stops its own gateway (2 workers, --balance even): 10,000 Pusher-protocol
// connections held, of which 100 are members of one presence channel
// (signed as an application's auth endpoint signs them) and the rest
// (bin/loadgen --protocol pusher) subscribers of a public channel that the
// app's HTTP API publishes to. Reports whether the member list is exact
// (every member's own list at its subscribe, every member_added seen, the
// HTTP API's users) and the delivery latency the load generator measured.
//
//   npm run bench:pusher-presence -- [--connections 10000] [--members 100] [--publish-rate 10] [--seconds 10] [--json scripts/results/pusher-presence.json]
import '../lib/runtime/node-version.js';
import { writeFileSync } from 'node:fs';
import { scriptArgs } from './harness/args.js';
import WebSocket from 'ws';
import { startGateway, eventually } from './harness/gateway.js';
import { Load } from './bench/load.js';
import { signedGet } from './bench/pusher-api.js';
import { sign } from '../lib/pusher/signatures.js';

const APP = { appId: 'bench', key: 'bench-key', secret: 'bench-secret-of-24-chars' };
const CHANNEL = 'presence-bench';

const { values } = scriptArgs({
  usage: '[--connections 10000] [--members 100] [--publish-rate 10] [--seconds 10] [--json scripts/results/pusher-presence.json]',
  options: {
    connections: { type: 'string', default: '10000' },
    members: { type: 'string', default: '100' },
    'publish-rate': { type: 'string', default: '10' },
    seconds: { type: 'string', default: '10' },
    json: { type: 'string', default: 'scripts/results/pusher-presence.json' }
  }
});
const connections = Number(values.connections);
const members = Number(values.members);
if (!(members >= 1 && members <= 100 && connections > members && connections <= 20000)) throw new Error('--members 1..100 (Pusher\'s cap), --connections above it and at most 20,000');

const gw = await startGateway(['--balance', 'even', '--pusher-app-id', APP.appId, '--pusher-key', APP.key, '--pusher-secret', APP.secret]);
try {
  const joined = [];
  for (let i = 0; i < members; i++) joined.push(await member(gw, `m${i}`));
  const ids = Array.from({ length: members }, (_, i) => `m${i}`);
  // Member i saw members 0..i at its subscribe and each later one arrive.
  await eventually(() => joined.every((m, i) => m.added.size === members - 1 - i), { what: 'every member_added', timeout: 30000 });
  const listsExact = joined.every((m, i) => same(m.initial, ids.slice(0, i + 1)) && same([...m.added], ids.slice(i + 1)));
  const load = new Load(
    { url: gw.url },
    {
      connections: connections - members,
      channels: 1,
      protocol: 'pusher',
      'pusher-key': APP.key,
      'pusher-app-id': APP.appId,
      'pusher-secret': APP.secret,
      'publish-rate': values['publish-rate'],
      'publish-via': 'http',
      rate: 2000,
      duration: values.seconds,
      processes: 2
    }
  );
  const report = await load.report;
  const users = (await signedGet(gw, APP, `/channels/${CHANNEL}/users`)).users.map((u) => u.id);
  const counts = await signedGet(gw, APP, `/channels/${CHANNEL}`, { info: 'user_count,subscription_count' });
  const held = members + report.open;
  const result = {
    at: new Date().toISOString(),
    connections: held,
    workers: 2,
    members,
    memberListExact: listsExact && same(users, ids) && counts.user_count === members,
    apiUsers: users.length,
    apiUserCount: counts.user_count,
    published: report.published,
    received: report.received,
    expected: report.expected,
    lost: report.lost,
    latencyMs: report.latencyMs,
    handshakeMs: report.handshakeMs,
    shortfalls: report.shortfalls
  };
  for (const m of joined) m.ws.close();
  console.log(JSON.stringify(result, null, 2));
  writeFileSync(values.json, `${JSON.stringify(result, null, 2)}\n`);
} finally {
  await gw.stop();
}

/** A presence member on a raw WebSocket: its list at subscribe, and who it saw arrive. */
async function member(gateway, userId) {
  const ws = new WebSocket(`ws://127.0.0.1:${gateway.port}/app/${APP.key}?protocol=7`);
  const m = { ws, initial: undefined, added: new Set() };
  let socketId;
  ws.on('message', (text) => {
    const frame = JSON.parse(text);
    const data = typeof frame.data === 'string' ? JSON.parse(frame.data) : frame.data;
    if (frame.event === 'pusher:connection_established') socketId = data.socket_id;
    else if (frame.event === 'pusher_internal:subscription_succeeded') m.initial = data.presence.ids;
    else if (frame.event === 'pusher_internal:member_added') m.added.add(data.user_id);
  });
  await eventually(() => socketId, { what: `${userId} connected` });
  const channelData = JSON.stringify({ user_id: userId });
  const auth = `${APP.key}:${sign(APP.secret, `${socketId}:${CHANNEL}:${channelData}`)}`;
  ws.send(JSON.stringify({ event: 'pusher:subscribe', data: { channel: CHANNEL, auth, channel_data: channelData } }));
  await eventually(() => m.initial, { what: `${userId} subscribed` });
  return m;
}

function same(a, b) {
  return a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);
}
