// How many TCP connections a server holds on its port, read from the kernel
// (/proc/net/tcp): the one count that means the same for every server, the
// gateway and a peer that serves no /stats alike.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const ESTABLISHED = '01';

/** Established connections whose local end is 127.0.0.1:port. */
function establishedOn(port) {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let count = 0;
  for (const line of readFileSync('/proc/net/tcp', 'latin1').split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields[1] === local && fields[3] === ESTABLISHED) count++;
  }
  return count;
}

/** Resolves true once `test(established count)` holds, false after `timeoutMs`. */
export async function untilEstablished(port, test, timeoutMs = 60000) {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (test(establishedOn(port))) return true;
    await sleep(100);
  }
  return false;
}
