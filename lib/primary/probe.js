// The start-up check of the hand-over: the primary sends its first worker a
// throwaway listening handle and waits for Node's acknowledgement, the one
// the hand-over line waits for before each next connection (../internals.js).
// A runtime that acknowledged some other way would hand every worker its
// first connection and hold the rest; this makes it refuse to start instead.
import net from 'node:net';
import { once } from 'node:events';
import { Message } from '../core/ipc.js';
import { InternalsChanged, onHandleAck } from '../runtime/internals.js';

const PROBE_TIMEOUT_MS = 5000; // a worker busy starting may be slow to read its channel

/** @returns {Promise<void>} rejects with InternalsChanged when no acknowledgement comes in time */
export async function probeHandOver(worker) {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  let stop;
  let timer;
  try {
    await new Promise((resolve, reject) => {
      stop = onHandleAck(worker.process, resolve);
      timer = setTimeout(() => reject(new InternalsChanged('a handle sent to a worker was never acknowledged (NODE_HANDLE_ACK)')), PROBE_TIMEOUT_MS);
      worker.send({ type: Message.PROBE }, server);
    });
  } finally {
    clearTimeout(timer);
    stop();
    server.close();
  }
}
