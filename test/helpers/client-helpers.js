// What the client and browser tests share: HTTP
// publishes, and clients pinned to a source address (so to a worker).
import WebSocket from 'ws';
import { connect, State } from '../../lib/client/index.js';
import { eventually } from '../../scripts/harness/gateway.js';

export const API_KEY = 'test-key';

/** POST /publish; retried while the connection it lands on dies under it. */
export async function httpPublish(gw, channel, data) {
  const res = await eventually(
    () =>
      fetch(`${gw.http}/publish`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json', Connection: 'close' },
        body: JSON.stringify({ channel, data })
      }),
    { what: `HTTP publish on ${channel}` }
  );
  if (res.status !== 202) throw new Error(`publish answered ${res.status}: ${await res.text()}`);
  return (await res.json()).seq;
}

/** A lib/client client over `ws`, dialling from `localAddress` (under --balance ip, that picks its worker). */
export function nodeClient(url, { localAddress = '127.0.0.1', ...options } = {}) {
  class PinnedWebSocket extends WebSocket {
    constructor(address, protocols) {
      super(address, protocols ?? [], { localAddress });
    }
  }
  return connect(url, { WebSocket: PinnedWebSocket, backoffBase: 50, backoffCap: 400, connectTimeout: 2000, ...options });
}

export function whenOpen(client, what = 'client open') {
  return eventually(() => client.state === State.OPEN && client.welcome, { what, timeout: 15000 });
}

/** An open client on a worker other than `worker`, trying source addresses 127.0.0.2, .3, … */
export async function clientAwayFrom(url, worker) {
  for (let i = 2; i < 40; i++) {
    const client = nodeClient(url, { localAddress: `127.0.0.${i}` });
    if ((await whenOpen(client)).worker !== worker) return client;
    client.close();
  }
  throw new Error(`no source address reached a worker other than ${worker}`);
}
