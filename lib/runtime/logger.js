// One pino logger per process, JSON lines on stdout, tagged with the role
// (primary or worker N) so a merged log still tells who said what.
// --log-format pretty (the default on a terminal) turns those lines into one
// readable line each, in the primary only: the workers keep writing JSON, to
// a pipe the primary reads (./primary/supervisor.js), so their logging costs
// what it always did.
import readline from 'node:readline';
import { require } from './require.js';

const pino = require('pino');

/**
 * @param {string} level
 * @param {object} bindings fields on every line (role, worker)
 * @param {'json'|'pretty'} [format]
 */
export function createLogger(level, bindings, format = 'json') {
  return pino(
    {
      level,
      base: { pid: process.pid, ...bindings },
      timestamp: pino.stdTimeFunctions.isoTime
    },
    format === 'pretty' ? { write: prettyWriter() } : jsonDestination()
  );
}

// Asynchronous, and deaf to its own errors: a closed stdout (EPIPE) must not
// take the gateway down with it. pino flushes what is pending on exit.
function jsonDestination() {
  const destination = pino.destination({ dest: 1, sync: false });
  destination.on('error', () => {});
  return destination;
}

/**
 * Writes each JSON log line of `stream` (a worker's stdout) to this
 * process's stdout as a readable one; a line that is not JSON goes through as
 * it is.
 */
export function prettifyLines(stream) {
  const write = prettyWriter();
  readline.createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => write(`${line}\n`));
}

const NOT_SHOWN = new Set(['level', 'time', 'pid', 'hostname', 'role', 'worker']);

/** A line's own fields as key=value, a value with spaces or an object as JSON. */
function fields(log, messageKey) {
  let text = '';
  for (const [key, value] of Object.entries(log)) {
    if (key === messageKey || NOT_SHOWN.has(key) || value === undefined) continue;
    const plain = typeof value === 'string' && /^[^\s"]+$/.test(value);
    text += ` ${key}=${plain ? value : JSON.stringify(value)}`;
  }
  return text;
}

/** A formatter: `write(jsonLine)` prints it readable on stdout. */
function prettyWriter() {
  const { prettyFactory } = require('pino-pretty');
  const format = prettyFactory({
    colorize: process.stdout.isTTY === true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    hideObject: true,
    messageFormat: (log, key) => `${log.role === 'worker' ? `worker ${log.worker}` : (log.role ?? '')}: ${log[key]}${fields(log, key)}`
  });
  process.stdout.on('error', () => {});
  return (line) => {
    process.stdout.write(line.startsWith('{') ? format(line) : line);
  };
}
