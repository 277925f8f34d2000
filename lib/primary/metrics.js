// The operator listener (--metrics-host:--metrics-port, loopback by default):
// the cluster-wide Prometheus endpoint, the status page and its JSON. For
// /metrics prom-client's AggregatorRegistry asks every worker for its metrics
// over cluster IPC and sums them; the primary's own figures (workers,
// restarts, relay) are appended from its own registry.
import http from 'node:http';
import { require } from '../runtime/require.js';
import { ListenError } from '../core/errors.js';
import { LoopDelay, collectDefaultMetrics } from '../runtime/loop-delay.js';

const client = require('prom-client');

/**
 * @param {object} sources
 * @param {() => number} sources.liveWorkers
 * @param {{figures: () => {channels: number, historyBytes: number, presenceClients: number}, available: boolean}} sources.engine
 */
export function createPrimaryMetrics({ liveWorkers, engine }) {
  const registry = new client.Registry();
  // Its event-loop delay sampler runs only while the workers hold sockets (./index.js).
  const loopDelay = new LoopDelay();
  collectDefaultMetrics(loopDelay, { register: registry, prefix: 'gateway_primary_' });
  const make = (Type, options) => new Type({ registers: [registry], ...options });
  // A gauge read from the engine's figures when scraped.
  const figure = (name, help, key) =>
    make(client.Gauge, {
      name,
      help,
      collect() {
        this.set(engine.figures()[key]);
      }
    });
  return {
    registry,
    loopDelay,
    workers: make(client.Gauge, {
      name: 'gateway_workers',
      help: 'Live workers',
      collect() {
        this.set(liveWorkers());
      }
    }),
    channels: figure('gateway_channels', 'Channels with state in the engine (routed to a worker, or with history)', 'channels'),
    historyBytes: figure('gateway_history_bytes', 'Bytes of message history held for recovery (payload plus a fixed overhead per entry)', 'historyBytes'),
    presenceClients: figure(
      'gateway_presence_clients',
      "Presence entries this node holds (memory: the whole machine's; redis: this node's clients)",
      'presenceClients'
    ),
    memberChanges: make(client.Counter, {
      name: 'gateway_presence_member_changes_total',
      help: "A user's first client entering a presence channel (arrived) or its last leaving (departed), once cluster-wide",
      labelNames: ['change']
    }),
    engineUp: make(client.Gauge, {
      name: 'gateway_engine_up',
      help: 'Whether the engine can publish: 0 while Redis is unreachable (always 1 for --engine memory)',
      collect() {
        this.set(engine.available ? 1 : 0);
      }
    }),
    failovers: make(client.Counter, {
      name: 'gateway_engine_failovers_total',
      help: 'Times the engine moved to a new Redis master (Sentinel, or a Cluster shard failed over)'
    }),
    publishLatency: make(client.Histogram, {
      name: 'gateway_engine_publish_seconds',
      help: 'From a publish leaving for the engine to its store answering (under --redis-wait-replicas, the replicas too), per publish',
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5]
    }),
    restarts: make(client.Counter, { name: 'gateway_worker_restarts_total', help: 'Workers restarted after dying' }),
    relayed: make(client.Counter, { name: 'gateway_relay_publishes_total', help: "Publishes this node's workers handed to the engine" }),
    handoverStalls: make(client.Counter, {
      name: 'gateway_handover_stalls_total',
      help: 'Connections handed to a worker whose acknowledgement never came: the line moved on after about a second'
    }),
    webhookEvents: make(client.Counter, {
      name: 'gateway_webhook_events_total',
      help: 'Webhook events by result: sent (the endpoint answered 2xx), retried (in an attempt that failed: once per attempt), dropped (given up after 5 minutes, or too many waiting); and app (native, or the Pusher app id)',
      labelNames: ['result', 'app']
    }),
    adminLogins: make(client.Counter, {
      name: 'gateway_admin_logins_total',
      help: 'Admin page login attempts by result: ok, wrong (a wrong password), locked (refused unchecked: five wrong within a minute from the address)',
      labelNames: ['result']
    }),
    refused: make(client.Counter, {
      name: 'gateway_connections_refused_total',
      help: 'Connections the primary closed before any worker saw them, by reason',
      labelNames: ['reason']
    })
  };
}

/**
 * Serves GET /metrics, GET / (the status page), GET /stats (its JSON) and,
 * with --admin-password, the admin page under /admin (lib/admin/) on host:port.
 * @param {object} options
 * @param {() => object|null} options.stats the latest cluster stats (lib/primary/cluster-stats.js)
 * @param {Buffer} options.page the status page (lib/primary/status-page.js)
 * @param {(req, res) => void} [options.admin] the admin page's routes; without them /admin is not found
 * @returns {Promise<http.Server>} once listening; a ListenError naming --metrics-port when it cannot
 */
export function serveMetrics({ host, port, registry, log, stats, page, admin }) {
  const aggregator = new client.AggregatorRegistry();
  const server = http.createServer(async (req, res) => {
    const path = req.url.split('?', 1)[0];
    if (path === '/') {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-cache' }).end(page);
      return;
    }
    if (admin !== undefined && (path === '/admin' || path.startsWith('/admin/'))) {
      admin(req, res);
      return;
    }
    if (path === '/stats') {
      const body = JSON.stringify(stats() ?? { error: 'starting' });
      res.writeHead(stats() ? 200 : 503, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' }).end(body);
      return;
    }
    if (path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found: try /metrics, /stats or /\n');
      return;
    }
    try {
      const text = (await aggregator.clusterMetrics()) + (await registry.metrics());
      res.writeHead(200, { 'Content-Type': aggregator.contentType }).end(text);
    } catch (err) {
      log.warn({ err: err.message }, 'metrics collection failed');
      res.writeHead(503, { 'Content-Type': 'text/plain' }).end(`metrics unavailable: ${err.message}\n`);
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(err.syscall === 'listen' ? new ListenError('--metrics-port', err) : err));
    server.listen(port, host, () => resolve(server));
  });
}
