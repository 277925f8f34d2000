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

/** A client authenticated as `user` (with `info`), from `localAddress`; with `publish`, allowed to publish there. */
export async function member(url, user, { info, localAddress = '127.0.0.1', subscribe = ['*'], publish } = {}) {
  const client = await TestClient.connect(url, { localAddress });
  const ack = await client.request({ type: 'auth', token: await joseHs256({ sub: user, info, subscribe, ...(publish && { publish }) }) });
  if (ack.type !== 'ack') throw new Error(`auth refused: ${JSON.stringify(ack)}`);
  return client;
}

/** The `clients` of a presence answer, or the error frame. */
export async function presenceOf(client, channel) {
  const answer = await client.request({ type: 'presence', channel });
  return answer.type === 'presence' ? answer.clients : answer;
}

/** Info that JSON escapes (quotes, a backslash, U+2028, a newline) and that UTF-8 takes 4 bytes for: a member is a value end to end. */
export const ODD_INFO = { name: 'Ann "A" \\ \u2028\n 😀', tags: [null, 1.5, { deep: true }] };

/**
 * Two tabs of user ann (info ODD_INFO) and one of bob, each [url, localAddress?], subscribed to `channel`.
 * @returns {Promise<{ann1, ann2, bob, expected: object}>} the clients, and the presence they make
 */
export async function twoTabsAndBob(channel, [url1, at1], [url2, at2], [url3, at3]) {
  const ann1 = await member(url1, 'ann', { info: ODD_INFO, localAddress: at1 });
  const ann2 = await member(url2, 'ann', { info: ODD_INFO, localAddress: at2 });
  const bob = await member(url3, 'bob', { localAddress: at3 });
  for (const c of [ann1, ann2, bob]) await c.subscribe(channel);
  const expected = {
    [ann1.welcome.connectionId]: { user: 'ann', info: ODD_INFO },
    [ann2.welcome.connectionId]: { user: 'ann', info: ODD_INFO },
    [bob.welcome.connectionId]: { user: 'bob' }
  };
  return { ann1, ann2, bob, expected };
}

/** The presence_diff frames about `channel` that reached a client. */
export function diffsOf(client, channel) {
  return client.frames.filter((f) => f.type === 'presence_diff' && f.channel === channel);
}

/** Whether a client's diffs of `channel` named `id` under `side` ('joins' or 'leaves'). */
export function named(client, channel, side, id) {
  return diffsOf(client, channel).some((d) => Object.hasOwn(d[side], id));
}

/** A presence answer with diffs applied in order: the member list a client keeps. */
export function applyDiffs(clients, diffs) {
  const list = { ...clients };
  for (const { joins, leaves } of diffs) {
    Object.assign(list, joins);
    for (const id in leaves) delete list[id];
  }
  return list;
}

/**
 * `mover` subscribes, and once `watcher` saw it join, closes.
 * @returns {Promise<Array<[string, object]>>} what the watcher's diffs said of the mover, in order: ['joins'|'leaves', entry]
 */
export async function comeAndGo(watcher, mover, channel) {
  const id = mover.welcome.connectionId;
  await mover.subscribe(channel);
  await eventually(() => named(watcher, channel, 'joins', id), { what: 'the join in a diff' });
  mover.close();
  await eventually(() => named(watcher, channel, 'leaves', id), { what: 'the leave in a diff' });
  const about = [];
  for (const d of diffsOf(watcher, channel)) for (const side of ['joins', 'leaves']) if (Object.hasOwn(d[side], id)) about.push([side, d[side][id]]);
  return about;
}
