// Presence tests' shared parts: clients pinned to a worker (--balance ip
// spreads source addresses), a token per user, and a presence read.
import { TestClient } from './client.js';
import { eventually } from '../../scripts/harness/gateway.js';
import { joseHs256 } from './tokens.js';

/** The namespaces of the presence tests: presence with join/leave, presence alone, neither. */
export const PRESENCE_NAMESPACES = {
  namespaces: [
    { name: 'room', presence: true, joinLeave: true },
    { name: 'quiet', presence: true },
    { name: 'plain' }
  ]
};

/** Source addresses that reach each worker, found by connecting: {1: '127.0.0.x', 2: …}. */
export async function addressesByWorker(url, workers = 2) {
  const found = {};
  for (let i = 2; i < 60 && Object.keys(found).length < workers; i++) {
    const client = await TestClient.connect(url, { localAddress: `127.0.0.${i}` });
    found[client.welcome.worker] ??= `127.0.0.${i}`;
    client.close();
  }
  return found;
}

/** A client authenticated as `user` (with `info`), from `localAddress`. */
export async function member(url, user, { info, localAddress = '127.0.0.1', subscribe = ['*'] } = {}) {
  const client = await TestClient.connect(url, { localAddress });
  const ack = await client.request({ type: 'auth', token: await joseHs256({ sub: user, info, subscribe }) });
  if (ack.type !== 'ack') throw new Error(`auth refused: ${JSON.stringify(ack)}`);
  return client;
}

/** The `clients` of a presence answer, or the error frame. */
export async function presenceOf(client, channel) {
  const answer = await client.request({ type: 'presence', channel });
  return answer.type === 'presence' ? answer.clients : answer;
}

/**
 * Two tabs of user ann (info {name: 'Ann'}) and one of bob, each [url, localAddress?], subscribed to `channel`.
 * @returns {Promise<{ann1, ann2, bob, expected: object}>} the clients, and the presence they make
 */
export async function twoTabsAndBob(channel, [url1, at1], [url2, at2], [url3, at3]) {
  const ann1 = await member(url1, 'ann', { info: { name: 'Ann' }, localAddress: at1 });
  const ann2 = await member(url2, 'ann', { info: { name: 'Ann' }, localAddress: at2 });
  const bob = await member(url3, 'bob', { localAddress: at3 });
  for (const c of [ann1, ann2, bob]) await c.subscribe(channel);
  const expected = {
    [ann1.welcome.connectionId]: { user: 'ann', info: { name: 'Ann' } },
    [ann2.welcome.connectionId]: { user: 'ann', info: { name: 'Ann' } },
    [bob.welcome.connectionId]: { user: 'bob' }
  };
  return { ann1, ann2, bob, expected };
}

/**
 * `mover` subscribes, unsubscribes, subscribes again and closes; `watcher`, subscribed already, must see it.
 * @returns {Promise<object[]>} the join/leave frames about the mover that reached the watcher, once all four did
 */
export async function comeAndGo(watcher, mover, channel) {
  const id = mover.welcome.connectionId;
  await mover.subscribe(channel);
  await mover.request({ type: 'unsubscribe', channel });
  await mover.subscribe(channel);
  mover.close();
  const about = () => watcher.frames.filter((f) => (f.type === 'join' || f.type === 'leave') && f.client === id);
  await eventually(() => about().length === 4, { what: 'four join/leave frames' });
  return about();
}
