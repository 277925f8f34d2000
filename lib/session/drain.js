// The drain's closes: every connection, whatever its transport, closed with
// 1001 (a stream ends: EventSource reconnects with its cursor).
import { CloseCode } from '../core/errors.js';
import { kTransport } from '../core/symbols.js';

const GRACE_MS = 2000; // a peer that never answers the close is cut after this

/**
 * Closes every connection, spread evenly over `spreadMs` so they do not all
 * reconnect at the same moment, then resolves once all are gone.
 * @param {Iterable<object>} conns
 */
export async function closeAll(conns, spreadMs) {
  const list = [...conns];
  const rounds = Math.max(1, Math.floor(spreadMs / 50));
  const perRound = Math.ceil(list.length / rounds);
  for (let i = 0; i < list.length; i += perRound) {
    for (const conn of list.slice(i, i + perRound)) conn[kTransport].close(conn, CloseCode.GOING_AWAY, 'server draining');
    if (i + perRound < list.length) await sleep(spreadMs / rounds);
  }
  const deadline = Date.now() + GRACE_MS;
  while (list.some((conn) => !conn[kTransport].isClosed(conn)) && Date.now() < deadline) await sleep(20);
  for (const conn of list) conn[kTransport].terminate(conn);
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
