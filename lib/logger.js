// One pino logger per process, JSON lines on stdout, tagged with the role
// (primary or worker N) so a merged log still tells who said what.
import { require } from './require.js';

const pino = require('pino');

export function createLogger(level, bindings) {
  // Asynchronous, and deaf to its own errors: a closed stdout (EPIPE) must not
  // take the gateway down with it. pino flushes what is pending on exit.
  const destination = pino.destination({ dest: 1, sync: false });
  destination.on('error', () => {});
  return pino(
    {
      level,
      base: { pid: process.pid, ...bindings },
      timestamp: pino.stdTimeFunctions.isoTime
    },
    destination
  );
}
