// The cluster-wide Prometheus endpoint. prom-client's AggregatorRegistry asks
// every worker for its metrics over cluster IPC and sums them; the primary's
// own figures (workers, restarts, relay) are appended from its own registry.
import http from 'node:http';
import { require } from '../require.js';

const client = require('prom-client');

export function createPrimaryMetrics({ liveWorkers }) {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry, prefix: 'gateway_primary_' });
  const make = (Type, options) => new Type({ registers: [registry], ...options });
  return {
    registry,
    workers: make(client.Gauge, {
      name: 'gateway_workers',
      help: 'Live workers',
      collect() {
        this.set(liveWorkers());
      }
    }),
    restarts: make(client.Counter, { name: 'gateway_worker_restarts_total', help: 'Workers restarted after dying' }),
    relayed: make(client.Counter, { name: 'gateway_relay_publishes_total', help: 'Publishes sequenced by the primary' }),
    refused: make(client.Counter, {
      name: 'gateway_connections_refused_total',
      help: 'Connections the primary closed before any worker saw them, by reason',
      labelNames: ['reason']
    })
  };
}

/**
 * Serves GET /metrics on host:port.
 * @returns {Promise<http.Server>} once listening
 */
export function serveMetrics({ host, port, registry, log }) {
  const aggregator = new client.AggregatorRegistry();
  const server = http.createServer(async (req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found: try /metrics\n');
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
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
