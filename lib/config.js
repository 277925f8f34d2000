// Every gateway option in one table: its flag, type, default, range and help.
// The CLI (bin/gateway.js), the GATEWAY_* environment variables, the workers
// (which receive the resolved object from the primary) and the README's table
// all come from here.
import os from 'node:os';
import { resolveOptions, commaList } from './cli.js';

const int = (min, max) => ({ type: 'number', integer: true, min, max });
const ms = (min) => ({ ...int(min, 24 * 3600 * 1000) });

export const options = {
  port: { ...int(0, 65535), default: 8080, describe: 'public listening port (0 = any free port; the bound port is logged)' },
  host: { type: 'string', default: '0.0.0.0', describe: 'public listening address' },
  workers: {
    ...int(1, 1024),
    default: () => os.availableParallelism(),
    defaultDescription: 'os.availableParallelism()',
    describe: 'worker processes'
  },
  backlog: { ...int(1, 1 << 20), default: 65535, describe: 'listen backlog (the kernel caps it at net.core.somaxconn)' },
  balance: {
    type: 'string',
    choices: ['ip', 'even'],
    default: 'ip',
    describe: 'ip: sticky by client IP; even: least-connections whatever the source address'
  },
  'proxy-protocol': { type: 'boolean', default: false, describe: 'expect a PROXY protocol v1/v2 header (classic ELB, NLB)' },
  'proxy-timeout': { ...ms(1), default: 5000, describe: 'ms to wait for a complete PROXY header before closing' },
  'trust-forwarded': { type: 'boolean', default: false, describe: 'take the client IP from X-Forwarded-For (ALB)' },
  'max-conns-per-ip': { ...int(0, 1e9), default: 0, describe: 'connections per client IP (0 = no cap; exact under --balance ip)' },
  path: {
    type: 'string',
    default: '/ws',
    check: (v) => (v.startsWith('/') ? undefined : `--path must start with /, got ${v}`),
    describe: 'WebSocket upgrade path'
  },
  'ping-interval': { ...ms(100), default: 25000, describe: 'ms between server pings; a peer that missed the previous ping is terminated' },
  'gc-interval': {
    ...ms(0),
    default: 0, // off: `npm run bench` measured 43–54 ms pauses at 15k connections per worker for 5–11 % less RSS
    describe: 'ms between manual full GCs per worker, staggered (0 = off, the default: see Benchmarks)'
  },
  'max-connections': { ...int(0, 1e9), default: 0, describe: 'connections per worker (0 = as many as the open-files limit allows, less 1024); further upgrades get 503' },
  'max-payload': { ...int(16, 1 << 30), default: 65536, describe: 'bytes per incoming frame or HTTP publish body' },
  'max-subscriptions': { ...int(1, 1e6), default: 100, describe: 'channels per connection' },
  'max-publish-rate': { ...int(1, 1e9), default: 100, describe: 'publishes per second per connection (token bucket)' },
  'max-buffered': { ...int(1024, 1 << 30), default: 1048576, describe: 'bytes queued to one client before it is dropped with 1013' },
  'api-key': { type: 'string', describe: 'bearer token that POST /publish requires (unset = HTTP publish disabled)' },
  'allowed-origins': {
    type: 'string',
    coerce: commaList,
    defaultDescription: 'any',
    describe: 'comma list of Origins allowed to upgrade'
  },
  'drain-timeout': { ...ms(0), default: 30000, describe: 'ms to spread client closes over on shutdown' },
  'metrics-port': { ...int(0, 65535), default: 9091, describe: 'cluster-wide Prometheus port on the primary (0 disables)' },
  'metrics-host': { type: 'string', default: '127.0.0.1', describe: 'metrics listening address' },
  'max-old-space-size': { ...int(16, 1 << 20), describe: "MiB of V8 old space per worker (Node's default when unset)" },
  'max-semi-space-size': {
    ...int(1, 1024),
    default: 2, // V8's own grows to 16 MiB during a ramp and stays resident: ~4 KB more per idle connection
    describe: 'MiB of V8 semi space (young generation) per worker'
  },
  'log-level': {
    type: 'string',
    choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    default: 'info',
    describe: 'pino log level'
  }
};

/** The resolved configuration for `given` (camelCase keys), defaults filled. */
export function resolveConfig(given) {
  return resolveOptions(options, given);
}
