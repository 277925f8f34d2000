// Every gateway option in one table: its flag, type, default, range and help.
// The CLI (bin/gateway.js), the GATEWAY_* environment variables, the workers
// (which receive the resolved object from the primary over IPC) and the
// README's table all come from here.
//
// A row with `secret` holds a key: it never travels in a worker's
// environment or command line (the primary takes its GATEWAY_* variable out
// of its own before forking, ./config-file.js, forks the workers without
// arguments and hands them their configuration over IPC).
// `secret: 'workers'` is a key the workers use; `secret: 'primary'` one that
// only the primary uses, never sent to a worker.
import os from 'node:os';
import { readFileSync } from 'node:fs';
import { createPublicKey } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { resolveOptions, commaList, camel, UsageError } from './cli.js';
import { engines } from '../engines/index.js';
import { namespacesProblem } from '../core/namespaces.js';
import { appsProblem, MIN_SECRET_LENGTH } from '../pusher/apps.js';

const int = (min, max) => ({ type: 'number', integer: true, min, max });
const ms = (min) => ({ ...int(min, 24 * 3600 * 1000) });

export const options = {
  config: {
    type: 'string',
    describe: 'JSON file of options (every flag under its camelCase name, plus namespaces); flags and GATEWAY_* override it; SIGHUP reads it again'
  },
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
    choices: ['ip', 'even', 'reuseport'],
    default: 'ip',
    describe:
      'ip: sticky by client IP; even: least-connections whatever the source address (both: the primary accepts and hands over); ' +
      'reuseport: every worker listens itself (SO_REUSEPORT) and the kernel spreads connections'
  },
  'proxy-protocol': { type: 'boolean', default: false, describe: 'expect a PROXY protocol v1/v2 header (classic ELB, NLB)' },
  'proxy-timeout': { ...ms(1), default: 5000, describe: 'ms to wait for a complete PROXY header before closing' },
  'trust-forwarded': { type: 'boolean', default: false, describe: 'take the client IP from X-Forwarded-For (ALB)' },
  'max-conns-per-ip': { ...int(0, 1e9), default: 0, describe: 'connections per client IP (0 = no cap), exact in every balancing mode' },
  path: {
    type: 'string',
    default: '/ws',
    check: (v) => (v.startsWith('/') ? undefined : `--path must start with /, got ${v}`),
    describe: 'WebSocket upgrade path'
  },
  'write-delay': {
    ...int(0, 1000),
    default: 0,
    describe: "ms a connection's frames may be held to go out in one write with later ones (0: those of one event-loop turn)"
  },
  'ping-interval': { ...ms(100), default: 25000, describe: 'ms between server pings; a peer that missed the previous ping is terminated' },
  'gc-interval': {
    ...ms(0),
    default: 0, // off: each collection pauses a worker of 15k connections tens of ms for a few % less RSS (Benchmarks)
    describe: 'ms between manual full GCs per worker, staggered (0 = off, the default: see Benchmarks)'
  },
  'max-connections': { ...int(0, 1e9), default: 0, describe: 'connections per worker (0 = as many as the open-files limit allows, less 1024); further upgrades get 503' },
  'max-payload': { ...int(16, 1 << 30), default: 65536, describe: 'bytes per incoming frame or HTTP publish body' },
  'max-subscriptions': { ...int(1, 1e6), default: 100, describe: 'channels per connection' },
  'max-publish-rate': { ...int(1, 1e9), default: 100, describe: 'publishes per second per connection (token bucket)' },
  'max-buffered': { ...int(1024, 1 << 30), default: 1048576, describe: 'bytes queued to one client before it is dropped with 1013' },
  'api-key': {
    type: 'string',
    secret: 'workers',
    describe: 'bearer token of the keyed HTTP routes: POST /publish, POST /disconnect and POST /api/* (unset: they answer 403)'
  },
  auth: {
    type: 'string',
    choices: ['none', 'jwt', 'hook'],
    default: 'none',
    describe:
      'none: anyone may connect, subscribe and publish (a warning is logged); jwt: every connection presents a token; ' +
      'hook: the application authorises each connection (--connect-hook)'
  },
  'jwt-secret': { type: 'string', secret: 'workers', check: minLength('jwt-secret', 32), describe: 'HMAC key for HS256/384/512 tokens (at least 32 characters)' },
  'jwt-public-key': { type: 'string', check: readablePublicKey, describe: 'path to a PEM public key for RS*, PS*, ES* or EdDSA tokens' },
  'jwt-jwks-url': { type: 'string', check: httpUrl('jwt-jwks-url'), describe: 'JWKS endpoint, cached and refetched on an unknown kid' },
  'jwt-audience': { type: 'string', describe: 'required aud claim (unchecked when unset)' },
  'jwt-issuer': { type: 'string', describe: 'required iss claim (unchecked when unset)' },
  'auth-timeout': { ...ms(100), default: 5000, describe: 'ms a WebSocket may stay open without a valid auth frame (closed with 4001)' },
  'max-conns-per-user': { ...int(0, 1e9), default: 0, describe: 'connections per user across all workers (0 = no cap; needs --auth jwt or hook)' },
  'connect-hook': {
    type: 'string',
    check: httpUrl('connect-hook'),
    describe: "URL POSTed for each new connection under --auth hook (the request's cookie, authorization, origin, user-agent)"
  },
  'subscribe-hook': { type: 'string', check: httpUrl('subscribe-hook'), describe: 'URL POSTed for subscribes in namespaces with subscribeHook: true' },
  'publish-hook': { type: 'string', check: httpUrl('publish-hook'), describe: 'URL POSTed for client publishes in namespaces with publishHook: true' },
  'refresh-hook': {
    type: 'string',
    check: httpUrl('refresh-hook'),
    describe: "URL POSTed ahead of a hook-authorised connection's expireAt (without it, the connection closes with 4003 then)"
  },
  'hook-timeout': { ...ms(1), default: 1000, describe: 'ms per hook request, counted from when it is sent (time in the queue does not count)' },
  'hook-concurrency': { ...int(1, 100000), default: 64, describe: 'hook requests in flight per worker; more wait in the queue' },
  'hook-queue': { ...int(0, 1e7), default: 10000, describe: 'hook requests waiting per worker; past it refused (1013, 503, unavailable)' },
  'tls-cert': { type: 'string', check: readableFile('tls-cert'), describe: 'path to a PEM certificate (chain): the workers terminate TLS (wss://, https://)' },
  'tls-key': { type: 'string', check: readableFile('tls-key'), describe: 'path to the PEM private key of --tls-cert' },
  'allowed-origins': {
    type: 'string',
    coerce: commaList,
    defaultDescription: 'any',
    describe: 'comma list of Origins allowed to upgrade'
  },
  'drain-timeout': { ...ms(0), default: 30000, describe: 'ms to spread client closes over on shutdown' },
  'metrics-port': { ...int(0, 65535), default: 9091, describe: 'cluster-wide Prometheus port on the primary (0 disables)' },
  'metrics-host': { type: 'string', default: '127.0.0.1', describe: 'metrics listening address' },
  'admin-password': {
    type: 'string',
    secret: 'primary',
    check: (v) => (v.length >= 12 ? undefined : '--admin-password must be at least 12 characters'),
    describe: 'enables the admin page (/admin on the metrics listener) behind this password, at least 12 characters; never logged, never given to the workers'
  },
  'history-size': { ...int(0, 1e6), default: 100, describe: 'messages kept per channel for recovery (0 disables history)' },
  'history-ttl': { ...int(1, 7 * 24 * 3600), default: 300, describe: 'seconds a message stays in history' },
  'history-memory': {
    ...int(1, 1 << 20),
    default: 256,
    describe: "MiB for all history on the machine; past it, the channels idle longest lose theirs first (--engine memory; under redis, Redis' maxmemory)"
  },
  'presence-ttl': {
    ...int(2, 24 * 3600),
    default: 60,
    describe: "seconds a node's presence entries live in Redis without a refresh: a crashed node's clients vanish after it (--engine redis)"
  },
  'presence-max-clients': { ...int(1, 1e6), default: 1000, describe: 'clients one presence answer may list; past it, too_many (ask presence_stats)' },
  'join-leave-interval': {
    ...int(1, 60000),
    default: 1000,
    describe: 'ms between presence_diff frames of a joinLeave channel: who came and went in the interval, in one frame'
  },
  engine: {
    type: 'string',
    choices: Object.keys(engines),
    default: 'memory',
    describe: 'memory: one machine, publishes relayed over IPC by the primary; redis: several gateway machines share channels through Redis'
  },
  'redis-url': {
    type: 'string',
    default: 'redis://127.0.0.1:6379',
    check: (v) => (/^rediss?:\/\/./.test(v) ? undefined : `--redis-url must be a redis:// or rediss:// URL, got ${v}`),
    describe: 'the Redis (6.2+ / 7, or Valkey) that the gateways share under --engine redis'
  },
  'redis-sentinels': {
    type: 'string',
    check: hostPorts('redis-sentinels'),
    describe: 'host:port,…: find the master through Redis Sentinel and follow its failovers (instead of --redis-url)'
  },
  'redis-master-name': { type: 'string', default: 'mymaster', describe: 'the Sentinel master group, with --redis-sentinels' },
  'redis-cluster': {
    type: 'string',
    check: hostPorts('redis-cluster'),
    describe: 'host:port,…: Redis Cluster (7+) seed nodes, instead of --redis-url; channels on their own shard (sharded pub/sub)'
  },
  'redis-wait-replicas': {
    ...int(0, 16),
    default: 0,
    describe: 'replicas that must hold a publish before it is acknowledged (Redis WAIT, one per batch); not in time: unavailable'
  },
  'redis-wait-timeout': { ...int(1, 60000), default: 100, describe: 'ms to wait for --redis-wait-replicas' },
  'webhook-url': {
    type: 'string',
    check: httpUrl('webhook-url'),
    describe: 'where channel_occupied/vacated and member_added/removed events are POSTed, batched and signed (needs --webhook-secret)'
  },
  'webhook-secret': {
    type: 'string',
    secret: 'primary',
    check: minLength('webhook-secret', 32),
    describe: 'HMAC-SHA256 key signing each webhook body (X-Gateway-Signature: sha256=<hex>); at least 32 characters'
  },
  'pusher-app-id': {
    type: 'string',
    describe: "enables Pusher's protocol (/app/<key>, the HTTP API on /apps/<id>) for one app with this id; several apps: the config file's pusherApps"
  },
  'pusher-key': { type: 'string', describe: "the Pusher app's key (public: clients connect to /app/<key>)" },
  'pusher-secret': {
    type: 'string',
    secret: 'workers',
    check: minLength('pusher-secret', MIN_SECRET_LENGTH),
    describe: `the Pusher app's secret: signs channel auth, the HTTP API and webhooks (at least ${MIN_SECRET_LENGTH} characters)`
  },
  'pusher-client-events': { type: 'boolean', default: false, describe: 'allow client-* events on the Pusher app\'s private and presence channels' },
  'pusher-webhook-url': { type: 'string', check: httpUrl('pusher-webhook-url'), describe: "where the Pusher app's webhooks go, in Pusher's format" },
  ably: {
    type: 'boolean',
    default: true,
    describe: "Ably's protocol for every app (the WebSocket at /, the REST API at /time, /keys/…, /channels/…): served wherever an app is; --no-ably leaves it off"
  },
  'ably-basic-auth': {
    type: 'string',
    choices: ['allow', 'loopback', 'deny'],
    default: 'loopback',
    describe: "where an Ably key (Basic auth, a key= query) is taken without TLS (with --trust-forwarded, an ALB's X-Forwarded-Proto https counts as TLS): loopback: from this machine only; deny: nowhere; allow: anywhere (it crosses the network readable)"
  },
  'apps-database': {
    type: 'string',
    secret: 'primary',
    check: (v) => (/^postgres(ql)?:\/\/./.test(v) ? undefined : '--apps-database must be a postgres:// or postgresql:// URL'),
    describe: 'PostgreSQL URL of the Pusher apps table (gateway_apps: made or brought up to date at first start, followed live); read by the primary only'
  },
  'apps-database-lock-timeout': {
    ...ms(1),
    default: 1000,
    describe: "ms any statement on the apps table waits for a lock (another session's open transaction) before it gives up, is logged and tried again later"
  },
  'apps-database-statement-timeout': {
    ...ms(1),
    default: 5000,
    describe: 'ms any statement on the apps table may run before the database cancels it (logged, tried again later)'
  },
  'member-grace': {
    ...ms(0),
    default: 3000,
    describe:
      'ms a departed user may come back before the member_removed webhook is sent (neither member webhook then; native and Pusher webhooks alike); clients see presence change at once'
  },
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
  },
  'log-format': {
    type: 'string',
    choices: ['pretty', 'json'],
    default: () => (process.stdout.isTTY ? 'pretty' : 'json'),
    defaultDescription: 'pretty on a terminal, json otherwise',
    describe: 'pretty: one readable line per event; json: one JSON object per line (pino), for a log collector'
  }
};

/**
 * The documented defaults of some options, under their camelCase names:
 * what a class that takes them by name merges what it is given over, so
 * that one built outside the gateway (a script, a test) behaves as the
 * gateway does by default.
 * @param {...string} flags rows of the table above
 */
export function defaultsOf(...flags) {
  const out = {};
  for (const flag of flags) {
    const { default: value } = options[flag];
    out[camel(flag)] = typeof value === 'function' ? value() : value;
  }
  return out;
}

/** The flags of the secret options (rows with `secret`). */
export const SECRET_OPTIONS = Object.keys(options).filter((name) => options[name].secret !== undefined);

/**
 * The configuration a worker starts with: all of it but the secrets that
 * only the primary uses.
 * @param {object} config resolved configuration
 * @returns {object} a copy
 */
export function workerConfig(config) {
  const copy = { ...config };
  for (const name of SECRET_OPTIONS) if (options[name].secret === 'primary') delete copy[camel(name)];
  return copy;
}

/**
 * The resolved configuration for `given` (camelCase keys), defaults filled.
 * @throws {UsageError} for a bad value or a combination that makes no sense
 */
export function resolveConfig(given) {
  const config = resolveOptions(options, given);
  config.namespaces = given.namespaces ?? [];
  if (given.pusherApps !== undefined) config.pusherApps = given.pusherApps;
  const problem = namespacesProblem(config.namespaces, options);
  if (problem) throw new UsageError(problem);
  return checkCombinations(config);
}

/**
 * Whether --max-conns-per-ip is counted by the primary: where one IP's
 * connections can land on several workers (reuseport, even). Under ip each
 * worker counts its own IPs, and that is exact.
 */
export function ipCapInPrimary(config) {
  return config.maxConnsPerIp > 0 && config.balance !== 'ip';
}

/**
 * Refuses flags that are each valid alone but not together.
 * @returns {object} config, unchanged
 * @throws {UsageError}
 */
export function checkCombinations(config) {
  const problem = combinationProblem(config);
  if (problem) throw new UsageError(problem);
  return config;
}

function combinationProblem(config) {
  const keys = ['jwtSecret', 'jwtPublicKey', 'jwtJwksUrl'].filter((k) => config[k] !== undefined);
  const flags = keys.map((k) => `--${kebab(k)}`).join(', ');
  if (config.auth === 'jwt' && keys.length === 0) return '--auth jwt needs a key: --jwt-secret, --jwt-public-key or --jwt-jwks-url';
  if (keys.length > 1) return `give one JWT key, not ${flags}`;
  if (config.auth !== 'jwt') {
    const jwtOnly = ['jwtSecret', 'jwtPublicKey', 'jwtJwksUrl', 'jwtAudience', 'jwtIssuer'].filter((k) => config[k] !== undefined);
    if (jwtOnly.length > 0) return `--${kebab(jwtOnly[0])} needs --auth jwt`;
  }
  if (config.auth === 'none' && config.maxConnsPerUser > 0) return '--max-conns-per-user needs --auth jwt or hook';
  return hooksProblem(config) ?? appsProblem(config) ?? otherProblem(config);
}

function hooksProblem(config) {
  if ((config.auth === 'hook') !== (config.connectHook !== undefined)) return '--auth hook and --connect-hook go together';
  if (config.refreshHook !== undefined && config.auth !== 'hook') return '--refresh-hook needs --auth hook';
  for (const [key, flag] of [
    ['subscribeHook', 'subscribe-hook'],
    ['publishHook', 'publish-hook']
  ]) {
    const ns = config.namespaces?.find((n) => n[key] === true);
    if (ns !== undefined && config[key] === undefined) return `namespace ${ns.name} has ${key}: true: give --${flag}`;
  }
  return undefined;
}

function otherProblem(config) {
  if ((config.tlsCert === undefined) !== (config.tlsKey === undefined)) return '--tls-cert and --tls-key go together';
  if (config.redisSentinels !== undefined && config.redisCluster !== undefined) return 'give --redis-sentinels or --redis-cluster, not both';
  if (config.webhookUrl !== undefined && config.webhookSecret === undefined) return '--webhook-url needs --webhook-secret: every webhook body is signed';
  if (config.webhookSecret !== undefined && config.webhookUrl === undefined) return '--webhook-secret needs --webhook-url';
  if (config.adminPassword !== undefined && config.metricsPort === 0) return '--admin-password needs the metrics listener, which --metrics-port 0 turns off';
  if (config.tlsCert !== undefined) return tlsProblem(config.tlsCert, config.tlsKey);
  return undefined;
}

function kebab(key) {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

function minLength(flag, min) {
  return (v) => (v.length >= min ? undefined : `--${flag} must be at least ${min} characters (a short HMAC key can be guessed)`);
}

function hostPorts(flag) {
  return (v) => (/^[^,:]+:\d+(,[^,:]+:\d+)*$/.test(v) ? undefined : `--${flag} must be host:port,…, got ${v}`);
}

function httpUrl(flag) {
  return (v) => (/^https?:\/\/./.test(v) ? undefined : `--${flag} must be an http:// or https:// URL, got ${v}`);
}

function readableFile(flag) {
  return (path) => {
    try {
      readFileSync(path);
      return undefined;
    } catch (err) {
      return `--${flag} ${path}: ${err.code ?? err.message}`;
    }
  };
}

// Checked here so a bad pair is a usage error, not workers dying at start.
function tlsProblem(cert, key) {
  try {
    createSecureContext({ cert: readFileSync(cert), key: readFileSync(key) });
    return undefined;
  } catch (err) {
    return `--tls-cert ${cert} with --tls-key ${key}: ${err.message}`;
  }
}

function readablePublicKey(path) {
  const unreadable = readableFile('jwt-public-key')(path);
  if (unreadable) return unreadable;
  try {
    createPublicKey(readFileSync(path));
    return undefined;
  } catch {
    return `--jwt-public-key ${path} is not a PEM public key`;
  }
}
