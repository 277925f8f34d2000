// The worker's Prometheus metrics, defined in prom-client's registry; the
// worker's wiring makes them answer (exposeMetrics). prom-client's
// AggregatorRegistry in the primary asks every worker for these over cluster
// IPC and sums them.
import { require } from '../runtime/require.js';
import { collectDefaultMetrics } from '../runtime/loop-delay.js';
import { ticks } from '../runtime/ticker.js';
import { isProtocolChannel, NATIVE_APP, protocolAppOf } from '../core/namespaces.js';

const client = require('prom-client');

/**
 * Adds the process's default metrics (its event-loop delay read from
 * `loopDelay`) and answers the primary's requests for them all.
 * @param {import('../runtime/loop-delay.js').LoopDelay} loopDelay the worker's sampler
 */
export function exposeMetrics(loopDelay) {
  // Three default metrics list every handle, resource or open file at each
  // scrape: ~2 µs a connection, a 30 ms stall of the worker per scrape at
  // 15,000 connections. A worker's open handles are its connections
  // (gateway_connections); process_max_fds stays, and the primary still
  // reports its own.
  collectDefaultMetrics(loopDelay, { except: ['processOpenFileDescriptors', 'processHandles', 'processResources'] });
  // prom-client starts answering the primary's metrics requests only once an
  // AggregatorRegistry has been constructed in the worker.
  new client.AggregatorRegistry();
}

const counter = (name, help, labelNames = [], collect = undefined) => new client.Counter({ name, help, labelNames, collect });
const gauge = (name, help, labelNames = [], collect = undefined) => new client.Gauge({ name, help, labelNames, collect });

// The connection figures of each transport (see transportMetrics), read by
// prom-client when it collects: a metric updated per connection would build
// its label key string and look it up on every open and every close.
const transports = [];
// Who counts the bytes written, on the hot path in plain numbers: each reports them at collection (addBytesSource).
const byteSources = [];

export { NATIVE_APP };
// What no app can be told of: a Pusher connection refused before it had one (an unknown key).
const UNKNOWN_APP = 'unknown';
// Each app's figures, by its label: plain numbers on the hot path, reported when collected.
const apps = new Map();

/** @returns {AppFigures} the figures of app `label` (made on first use) */
export function appFigures(label) {
  let figures = apps.get(label);
  if (figures === undefined) apps.set(label, (figures = { published: 0, delivered: 0, bytes: 0 }));
  return figures;
}

const NATIVE = appFigures(NATIVE_APP);

/** The figures of a channel's app: another protocol's channel (its name starts with '#') is its app's. */
function figuresOfChannel(channel) {
  return isProtocolChannel(channel) ? appFigures(protocolAppOf(channel)) : NATIVE;
}

/** A publish accepted on `channel`. */
export function countPublished(channel) {
  figuresOfChannel(channel).published++;
}

/** `n` message frames written to subscribers of `channel`. */
export function countDelivered(channel, n) {
  figuresOfChannel(channel).delivered += n;
}

/** Each app's figure `key`, by label, for a collect(): the native protocol's first. */
function eachApp(key, set) {
  for (const [label, figures] of apps) if (figures[key] !== 0 || label === NATIVE_APP) set(label, figures[key]);
}

export const metrics = {
  connections: gauge('gateway_connections', 'Open connections, by transport (ws, sse), protocol (native, pusher, ably) and app (native, a Pusher app id, or unknown)', ['transport', 'protocol', 'app'], function () {
    this.reset();
    for (const t of transports) {
      if (t.apps === undefined) {
        this.set({ transport: t.transport, protocol: t.protocol, app: t.protocol === NATIVE_APP ? NATIVE_APP : UNKNOWN_APP }, t.open);
        continue;
      }
      let counted = 0;
      for (const [label, count] of t.apps.counts()) {
        this.set({ transport: t.transport, protocol: t.protocol, app: label }, count);
        counted += count;
      }
      this.set({ transport: t.transport, protocol: t.protocol, app: UNKNOWN_APP }, t.open - counted);
    }
  }),
  // A transport's figures of every protocol are summed under its label.
  opened: counter('gateway_connections_opened_total', 'Connections opened, by transport', ['transport'], function () {
    this.reset();
    for (const t of transports) this.inc({ transport: t.transport }, t.opened);
  }),
  closed: counter('gateway_connections_closed_total', 'Connections closed, by transport and reason', ['transport', 'reason'], function () {
    this.reset();
    for (const t of transports) for (const [reason, n] of t.closedBy) this.inc({ transport: t.transport, reason }, n);
  }),
  rejected: counter('gateway_upgrades_rejected_total', 'WebSocket upgrades refused, by reason', ['reason']),
  subscriptions: gauge('gateway_subscriptions', 'Channel subscriptions held by connections'),
  published: counter('gateway_messages_published_total', 'Messages accepted for publishing (WebSocket and HTTP), by app', ['app'], function () {
    this.reset();
    eachApp('published', (app, n) => this.inc({ app }, n));
  }),
  skipped: counter('gateway_publishes_skipped_total', 'Server API publishes that published nothing, by reason (duplicate idempotencyKey, stale version)', ['reason']),
  apiRequests: counter(
    'gateway_api_requests_total',
    "Server API calls (POST /api/<method>, and each command of a batch) and Pusher's HTTP API calls, by method, result code and app",
    ['method', 'code', 'app']
  ),
  delivered: counter('gateway_messages_delivered_total', 'Message frames written to subscribers, by app', ['app'], function () {
    this.reset();
    eachApp('delivered', (app, n) => this.inc({ app }, n));
  }),
  presenceDiffsSent: counter('gateway_join_leave_sent_total', 'presence_diff frames (SSE events) written to subscribers'),
  bytesSent: counter('gateway_bytes_sent_total', 'Bytes written to clients (frames, events, pings), by encoding (json: JSON WebSockets and SSE; msgpack) and app', ['encoding', 'app'], function () {
    this.reset();
    for (const report of byteSources) report(this);
  }),
  deltas: counter('gateway_deltas_total', 'Messages to delta subscribers, by result (sent: as a delta; full: whole, being first, after a gap, or no smaller as a delta)', ['result']),
  dropped: counter('gateway_messages_dropped_total', 'Messages or clients dropped, by reason', ['reason']),
  authFailures: counter('gateway_auth_failures_total', 'Refused tokens and frames, by reason (missing, invalid, expired, forbidden)', ['reason']),
  disconnects: counter('gateway_disconnects_total', 'Connections closed by the gateway for auth, by reason (auth_timeout, token_expired, api)', ['reason']),
  errors: counter('gateway_protocol_errors_total', 'Error frames sent to clients, by code', ['code']),
  recoveries: counter('gateway_recoveries_total', 'Subscribes with since, by result', ['result']),
  pings: counter('gateway_pings_sent_total', 'Keepalive ping frames sent'),
  timerTicks: counter('gateway_timer_ticks_total', "Ticks of the periodic timers, by timer: each runs only while there is work for it", ['timer'], function () {
    this.reset();
    for (const [timer, n] of ticks) this.inc({ timer }, n);
  }),
  terminated: counter('gateway_peers_terminated_total', 'Peers terminated for not answering the previous ping'),
  jwksFetches: counter('gateway_jwks_fetches_total', 'Requests to --jwt-jwks-url, by result (ok, failed)', ['result']),
  hookRequests: counter(
    'gateway_hook_requests_total',
    'Hook calls, by hook (connect, subscribe, publish, refresh) and result (ok, refused, timeout, server_error, unreachable, invalid, too_large, redirect, queue_full, gone)',
    ['hook', 'result']
  ),
  hookDuration: new client.Histogram({
    name: 'gateway_hook_duration_seconds',
    help: 'Hook requests from when they are sent (queue time excluded) to their outcome, by hook',
    labelNames: ['hook'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]
  }),
  hookQueue: gauge('gateway_hook_queue', 'Hook requests waiting for a free place (at most --hook-concurrency in flight per worker)'),
  gcRuns: counter('gateway_gc_runs_total', 'Manual full garbage collections'),
  gcPause: new client.Histogram({
    name: 'gateway_gc_pause_seconds',
    help: 'Pause of each manual full garbage collection',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]
  })
};

/**
 * The worker's counts for its stats report (../worker/stats.js), summed from
 * the plain numbers behind the metrics: a collect() of each labelled metric
 * costs the report, which runs every second while connections are held,
 * several times what it reads.
 */
export async function workerCounts() {
  let connections = 0;
  let streams = 0;
  for (const t of transports) {
    connections += t.open;
    if (t.transport === 'sse') streams += t.open;
  }
  let published = 0;
  let delivered = 0;
  for (const figures of apps.values()) {
    published += figures.published;
    delivered += figures.delivered;
  }
  const total = async (metric) => (await metric.get()).values.reduce((sum, v) => sum + v.value, 0);
  return { connections, streams, subscriptions: await total(metrics.subscriptions), published, delivered, gcRuns: await total(metrics.gcRuns) };
}

/** Has prom-client read a gauge from `read()` when it collects: nothing to update on the hot path. */
export function gaugeReads(gauge, read) {
  gauge.collect = function () {
    this.set(read());
  };
}

/**
 * One transport's connection figures: plain numbers counted on open and
 * close, which the metrics above report when collected.
 * @param {'ws'|'sse'} transport
 * @param {'native'|'pusher'|'ably'} [protocol] what the connection speaks
 * @param {{apps?: {counts: () => Iterable<[string, number]>}}} [options] apps:
 *   its connections by app (./app-counts.js), counted under each app's id;
 *   otherwise all under one label
 */
export function transportMetrics(transport, protocol = 'native', { apps } = {}) {
  const figures = new TransportFigures(transport, protocol, apps);
  transports.push(figures);
  return figures;
}

/**
 * The bytes a transport wrote, for gateway_bytes_sent_total: all of it the
 * native protocol's, or (a protocol with apps) each app's, and the rest unknown.
 */
export function reportBytes(counter, transport, bytes) {
  const labels = { encoding: transport.encoding, app: NATIVE_APP };
  if (!transport.hasApps) return void counter.inc(labels, bytes);
  let counted = 0;
  for (const [label, figures] of apps) {
    if (label === NATIVE_APP || figures.bytes === 0) continue;
    counter.inc({ ...labels, app: label }, figures.bytes);
    counted += figures.bytes;
  }
  if (bytes > counted) counter.inc({ ...labels, app: UNKNOWN_APP }, bytes - counted);
}

class TransportFigures {
  constructor(transport, protocol, apps) {
    this.transport = transport;
    this.protocol = protocol;
    this.apps = apps;
    this.open = 0;
    this.opened = 0;
    this.closedBy = new Map(); // reason -> connections closed
  }

  added() {
    this.open++;
    this.opened++;
  }

  /** @param {string} reason the close reason label (see closeReason in ./sessions.js) */
  closed(reason) {
    this.open--;
    this.closedBy.set(reason, (this.closedBy.get(reason) ?? 0) + 1);
  }
}

/**
 * @typedef {object} AppFigures
 * @property {number} published
 * @property {number} delivered
 * @property {number} bytes written to its connections, of a protocol with apps
 */

/**
 * Counts of bytes written, kept by their owner (../transport/transport.js)
 * and reported into gateway_bytes_sent_total when the metrics are collected.
 * @param {(counter: import('prom-client').Counter) => void} report
 */
export function addBytesSource(report) {
  byteSources.push(report);
}
