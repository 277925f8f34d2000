// One pino logger per process, JSON lines on stdout, tagged with the role
// (primary or worker N) so a merged log still tells who said what.
import pino from 'pino';

export function createLogger(level, bindings) {
  return pino({
    level,
    base: { pid: process.pid, ...bindings },
    timestamp: pino.stdTimeFunctions.isoTime
  });
}
