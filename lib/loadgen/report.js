// The run's report: the JSON object (its field names are a fixed interface:
// scripts and the benchmarks read them), the human summary, the progress
// line, and whether the run fell short.
import { Histogram } from './histogram.js';
import { countOf } from './totals.js';

/**
 * @param {object} run
 * @param {object} run.options resolved options
 * @param {number} run.processes
 * @param {object} run.totals the agents' final figures, combined
 * @param {number} run.heldAtClose connections open when closing began
 * @param {object} run.publishing {published, errors, unacked} (zeros without publishing)
 * @param {number} run.expected messages the subscribers should have received
 * @param {number} run.durationS
 * @param {number} run.rampS
 * @param {string} [run.aborted] why the run stopped early
 */
export function buildReport({ options, processes, totals: t, heldAtClose, publishing, expected, durationS, rampS, aborted }) {
  const latency = t.latencyUs ?? new Histogram();
  const handshake = t.handshakeUs ?? new Histogram();
  const reconnect = t.reconnectUs ?? new Histogram();
  const connectS = (t.lastOpenAt - t.firstAttemptAt) / 1000;
  const rss = t.rss ?? {};
  const report = {
    target: options.connections,
    transport: options.transport,
    open: t.peakOpen ?? 0,
    heldAtClose,
    failed: t.failed ?? {},
    dropped: t.dropped ?? {},
    connectRate: connectS > 0 ? round(t.opened / connectS) : 0,
    rampS: round(rampS),
    ...rampRates(t),
    handshakeMs: ms(handshake, ['min', 'mean', 'p50', 'p90', 'p99', 'max']),
    subscribed: t.subscribed ?? 0,
    subscribeErrors: t.subscribeErrors ?? {},
    published: publishing.published,
    publishErrors: publishing.errors,
    publishUnacked: publishing.unacked,
    received: t.received ?? 0,
    expected,
    lost: Math.max(0, expected - (t.received ?? 0)),
    extra: Math.max(0, (t.received ?? 0) - expected),
    outOfOrder: t.outOfOrder ?? 0,
    seqGaps: t.gaps ?? 0,
    reconnects: t.reconnects ?? 0,
    recovered: t.recovered ?? 0,
    unrecoverable: t.unrecoverable ?? 0,
    epochChanged: t.epochChanged ?? 0,
    seqRestarts: t.seqRestarts ?? 0,
    reconnectMs: ms(reconnect, ['p50', 'p99', 'max']),
    latencyMs: ms(latency, ['min', 'mean', 'stdev', 'p50', 'p90', 'p99', 'max']),
    durationS: round(durationS),
    processes,
    localAddresses: options.localAddress.length,
    agentRssBytes: rss.peak ?? 0,
    rssPerConnectionBytes: rss.heldConnections > 0 ? Math.round((rss.held - rss.baseline) / rss.heldConnections) : 0
  };
  if (aborted) report.aborted = aborted;
  report.shortfalls = shortfalls(report);
  return report;
}

/** What makes the run a failure (exit code 1); empty when it did what was asked. */
function shortfalls(r) {
  const out = [];
  if (r.aborted) out.push(`aborted: ${r.aborted}`);
  if (r.open < r.target) out.push(`open ${r.open} < target ${r.target}`);
  if (r.lost > 0) out.push(`lost ${r.lost}`);
  if (r.outOfOrder > 0) out.push(`out of order ${r.outOfOrder}`);
  return out;
}

const PORTS_HINT =
  '  hint       EADDRNOTAVAIL/EADDRINUSE: the source addresses ran out of ephemeral ports (often TIME_WAIT ' +
  'entries of an earlier run): give more --local-address addresses, or wait 60 s for TIME_WAIT to clear';

export function formatSummary(r, url) {
  const l = r.latencyMs;
  const h = r.handshakeMs;
  const lines = [
    `loadgen ${url}: ${r.target} ${r.transport === 'sse' ? 'SSE streams (GET /sse)' : 'connections'}, ${r.processes} processes, ${r.localAddresses || 'default'} source addresses`,
    `  open       ${r.open} / ${r.target} at peak, ${r.heldAtClose} held at close; failed ${reasons(r.failed)}; dropped ${reasons(r.dropped)}`,
    `  connect    ${r.connectRate}/s (ramp ${r.rampS} s; first 90 % ${r.first90Rate}/s, last 10 % ${r.last10Rate}/s); handshake p50 ${h.p50} ms, p99 ${h.p99} ms, max ${h.max} ms`,
    `  messages   published ${r.published} (errors ${reasons(r.publishErrors)}, unacked ${r.publishUnacked}); ` +
      `received ${r.received} of ${r.expected} expected; lost ${r.lost}; out of order ${r.outOfOrder}`,
    `  latency    min ${l.min} mean ${l.mean} stdev ${l.stdev} p50 ${l.p50} p90 ${l.p90} p99 ${l.p99} max ${l.max} ms`,
    `  agents     RSS ${mib(r.agentRssBytes)} MiB at peak; ${r.rssPerConnectionBytes} bytes per held connection`,
    `  duration   ${r.durationS} s`,
    `  result     ${r.shortfalls.length === 0 ? 'OK' : `FELL SHORT: ${r.shortfalls.join('; ')}`}`
  ];
  if (r.reconnects > 0) {
    lines.splice(4, 0, `  reconnect  ${r.reconnects} dropped and re-dialled; recovered ${r.recovered}, unrecoverable ${r.unrecoverable} (${r.epochChanged} in a new epoch; their missed messages count as lost); ` +
      `drop to resubscribed p50 ${r.reconnectMs.p50} ms, p99 ${r.reconnectMs.p99} ms, max ${r.reconnectMs.max} ms`);
  }
  if (r.failed.EADDRNOTAVAIL || r.failed.EADDRINUSE) lines.push(PORTS_HINT);
  return lines.join('\n') + '\n';
}

/**
 * One progress line from the latest combined status, then each agent's
 * handshakes in flight and worst event-loop delay (ms) since the last line,
 * so a stalled agent shows.
 */
export function progressLine(t, { uptimeS, target, connectRate, agents = [] }) {
  const latency = t.latencyUs ?? new Histogram();
  const each = agents.map(({ handshaking = 0, loopDelayMs = 0 } = {}) => `${handshaking}/${Math.round(loopDelayMs)}`);
  return (
    `[${uptimeS.toFixed(1).padStart(6)} s] open ${t.open ?? 0}/${target}  failed ${reasons(t.failed)}  ` +
    `rate ${Math.round(connectRate)}/s  received ${t.received ?? 0}  ` +
    `latency p50 ${round(latency.quantile(0.5) / 1000)} ms p99 ${round(latency.quantile(0.99) / 1000)} ms` +
    (each.length > 0 ? `  agents handshaking/loop ms ${each.join(' ')}` : '') +
    '\n'
  );
}

/**
 * Connects per second over the first 90 % of the ramp and over the rest: a
 * ramp that slows near its end (a wall) shows as a much lower second figure.
 */
function rampRates(t) {
  if (!(t.at90 > 0) || !(t.opened90 > 0)) return { first90Rate: 0, last10Rate: 0 };
  const firstS = (t.at90 - t.firstAttemptAt) / 1000;
  const lastS = (t.lastOpenAt - t.at90) / 1000;
  return {
    first90Rate: firstS > 0 ? round(t.opened90 / firstS) : 0,
    last10Rate: lastS > 0 ? round((t.opened - t.opened90) / lastS) : 0
  };
}

function ms(h, fields) {
  const value = { min: h.count ? h.min : 0, mean: h.mean, stdev: h.stdev, max: h.max };
  const out = {};
  for (const f of fields) out[f] = round((f.startsWith('p') ? h.quantile(Number(f.slice(1)) / 100) : value[f]) / 1000);
  return out;
}

function reasons(table = {}) {
  const total = countOf(table);
  if (total === 0) return '0';
  return `${total} (${Object.entries(table).map(([k, v]) => `${k} ${v}`).join(', ')})`;
}

function round(x) {
  return Math.round(x * 100) / 100;
}

function mib(bytes) {
  return round(bytes / 1048576);
}
