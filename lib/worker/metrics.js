// The worker's Prometheus metrics. prom-client's AggregatorRegistry in the
// primary asks every worker for these over cluster IPC and sums them.
import { require } from '../require.js';

const client = require('prom-client');

client.collectDefaultMetrics();
// prom-client starts answering the primary's metrics requests only once an
// AggregatorRegistry has been constructed in the worker.
new client.AggregatorRegistry(); // eslint-disable-line no-new

const counter = (name, help, labelNames = []) => new client.Counter({ name, help, labelNames });
const gauge = (name, help, labelNames = []) => new client.Gauge({ name, help, labelNames });

export const metrics = {
  connections: gauge('gateway_connections', 'Open connections, by transport (ws, sse)', ['transport']),
  opened: counter('gateway_connections_opened_total', 'Connections opened, by transport', ['transport']),
  closed: counter('gateway_connections_closed_total', 'Connections closed, by transport and reason', ['transport', 'reason']),
  rejected: counter('gateway_upgrades_rejected_total', 'WebSocket upgrades refused, by reason', ['reason']),
  subscriptions: gauge('gateway_subscriptions', 'Channel subscriptions held by connections'),
  published: counter('gateway_messages_published_total', 'Messages accepted for publishing (WebSocket and HTTP)'),
  delivered: counter('gateway_messages_delivered_total', 'Message frames written to subscribers'),
  dropped: counter('gateway_messages_dropped_total', 'Messages or clients dropped, by reason', ['reason']),
  authFailures: counter('gateway_auth_failures_total', 'Refused tokens and frames, by reason (missing, invalid, expired, forbidden)', ['reason']),
  disconnects: counter('gateway_disconnects_total', 'Connections closed by the gateway for auth, by reason (auth_timeout, token_expired, api)', ['reason']),
  errors: counter('gateway_protocol_errors_total', 'Error frames sent to clients, by code', ['code']),
  recoveries: counter('gateway_recoveries_total', 'Subscribes with since, by result', ['result']),
  pings: counter('gateway_pings_sent_total', 'Keepalive ping frames sent'),
  terminated: counter('gateway_peers_terminated_total', 'Peers terminated for not answering the previous ping'),
  gcRuns: counter('gateway_gc_runs_total', 'Manual full garbage collections'),
  gcPause: new client.Histogram({
    name: 'gateway_gc_pause_seconds',
    help: 'Pause of each manual full garbage collection',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]
  })
};

/**
 * One transport's connection metrics, its label bound once: a label looked up
 * per call costs a hash of the labels per connection.
 * @param {'ws'|'sse'} transport
 */
export function transportMetrics(transport) {
  const closedBy = new Map(); // reason -> its child, bound on first use
  return {
    connections: metrics.connections.labels({ transport }),
    opened: metrics.opened.labels({ transport }),
    closed(reason) {
      let child = closedBy.get(reason);
      if (child === undefined) closedBy.set(reason, (child = metrics.closed.labels({ transport, reason })));
      child.inc();
    }
  };
}
