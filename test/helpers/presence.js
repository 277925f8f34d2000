// Presence tests' shared parts: clients pinned to a worker (--balance ip
// spreads source addresses), a token per user, and a presence read.
import { TestClient } from './client.js';
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
