// The soak's flags, their defaults, and the short mode (`--short`, about a
// minute) that `npm test` runs so the script cannot rot.
import os from 'node:os';
import path from 'node:path';
import { scriptArgs } from '../harness/args.js';
import { machineDefaults } from './machine.js';

// Sized to this machine (scripts/soak/machine.js says the rule).
const SIZE = machineDefaults();

export const OPTIONS = {
  minutes: { type: 'string', default: '60', describe: 'length of the run' },
  short: { type: 'boolean', default: false, describe: 'about one minute, small load, faults every few seconds (the test)' },
  connections: { type: 'string', default: String(SIZE.connections), describe: 'WebSocket connections held (the SSE streams come on top); default from the cores, memory and open-files limit' },
  'sse-streams': { type: 'string', default: String(SIZE.sseStreams), describe: 'SSE streams held by a second loadgen, which publishes over HTTP (0 = none); default from the cores' },
  workers: { type: 'string', default: String(SIZE.workers), describe: 'gateway workers; default one per core' },
  channels: { type: 'string', default: '100', describe: 'channels the holders subscribe to' },
  'publish-rate': { type: 'string', default: '200', describe: 'messages per second over WebSocket (HTTP publishes a quarter of it on top)' },
  'reconnect-every': { type: 'string', default: '60', describe: 'seconds between reconnect storms (10 % of the holders dropped at once, recovering)' },
  'kill-every': { type: 'string', default: '180', describe: 'seconds between SIGKILLs of a random worker' },
  'hostile-every': { type: 'string', default: '120', describe: 'seconds between bursts of hostile input' },
  'churn-connections': { type: 'string', default: '300', describe: 'connections a churn loadgen opens and closes, again and again (0 = none)' },
  'sample-every': { type: 'string', default: '10', describe: 'seconds between JSON lines' },
  auth: { type: 'string', default: 'none', describe: "none or jwt: the gateway checks tokens (a secret drawn for the run); the loadgens sign one per connection" },
  engine: { type: 'string', default: 'memory', describe: 'memory or redis (a redis-server of its own, restarted once mid-run, unless --redis-url)' },
  'redis-url': { type: 'string', describe: 'a Redis for --engine redis that the soak did not start: no Redis restart is injected' },
  'gc-interval': { type: 'string', default: '0', describe: "the gateway's --gc-interval (ms, 0 = off)" },
  out: { type: 'string', describe: 'folder for soak.jsonl, summary.json and plot.html (default: a new folder under the temp dir)' }
};

const SHORT = {
  minutes: '1',
  connections: '400',
  'sse-streams': '100',
  workers: '2',
  channels: '20',
  'publish-rate': '100',
  'reconnect-every': '10',
  'kill-every': '20',
  'hostile-every': '15',
  'churn-connections': '100',
  'sample-every': '2'
};

/** @returns {object} numbers as numbers, the short mode's values where a flag was not given (a mistake ends the process: one line and the usage, exit 2) */
export function soakOptions(argv) {
  const { values, usageError } = scriptArgs({ usage: '--minutes 30 [options]', about: 'a long run under load with faults, sampled as it goes', args: argv, options: OPTIONS });
  const given = new Set(argv.filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')[0]));
  const raw = { ...values };
  if (values.short) for (const [k, v] of Object.entries(SHORT)) if (!given.has(k)) raw[k] = v;
  const o = { short: values.short, auth: raw.auth, engine: raw.engine, redisUrl: raw['redis-url'] };
  for (const k of Object.keys(OPTIONS)) {
    if (['short', 'auth', 'engine', 'redis-url', 'out'].includes(k)) continue;
    const n = Number(raw[k]);
    if (!Number.isFinite(n) || n < 0) usageError(`--${k} must be a number >= 0, got ${raw[k]}`);
    o[camel(k)] = n;
  }
  if (!['none', 'jwt'].includes(o.auth)) usageError(`--auth must be none or jwt, got ${o.auth}`);
  if (!['memory', 'redis'].includes(o.engine)) usageError(`--engine must be memory or redis, got ${o.engine}`);
  if (o.minutes <= 0 || o.connections < 1 || o.workers < 1 || o.channels < 1) usageError('--minutes, --connections, --workers and --channels must be positive');
  o.sizing = SIZE.rule;
  o.out = raw.out ?? path.join(os.tmpdir(), `soak-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  o.durationS = o.minutes * 60;
  // Faults stop early enough for the last reconnects to recover before the loadgens drain.
  o.quietTailS = Math.max(10, o.durationS * 0.1);
  o.warmupS = Math.max(o.sampleEvery * 3, o.durationS * 0.2);
  return o;
}

function camel(flag) {
  return flag.replace(/-(.)/g, (_, c) => c.toUpperCase());
}
