// Turns the doctor's check results into text: the report `gateway doctor`
// prints, and the number formats the checks' own sentences use.
import { Status } from './status.js';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

export function count(n) {
  return n.toLocaleString('en-US', { maximumFractionDigits: 0 });
}

export function bytes(n) {
  return n >= GiB ? `${(n / GiB).toFixed(1)} GiB` : `${Math.ceil(n / MiB)} MiB`;
}

/** A current or needed value as the report shows it. */
export function show(value, unit) {
  if (value === undefined) return '?';
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.join(' ') + (unit === 'pages' ? ' pages' : '');
  if (unit === 'bytes') return bytes(value);
  return count(value) + (unit === 'pages' ? ' pages' : '');
}

/**
 * @param {object[]} results from checkLimits
 * @param {{connections: number, workers: number, backlog: number}} target
 * @returns {string} the whole report, one block per limit, then a verdict
 */
export function formatReport(results, { connections, workers, backlog }) {
  const perWorker = Math.ceil(connections / workers);
  const lines = [
    `Limits for ${count(connections)} connections over ${workers} workers (${count(perWorker)} per worker), listen backlog ${count(backlog)}:`,
    ''
  ];
  const labelWidth = Math.max(...results.map((r) => r.label.length));
  const currentWidth = Math.max(...results.map((r) => show(r.current, r.unit).length));
  for (const r of results) {
    const needed = r.needed === undefined ? '' : `needed ${show(r.needed, r.unit)}`;
    lines.push(`${r.status.toUpperCase().padEnd(7)} ${r.label.padEnd(labelWidth)}  ${show(r.current, r.unit).padEnd(currentWidth)}  ${needed}`.trimEnd());
    if (r.status !== Status.OK) lines.push(`        ${r.detail}`);
    if (r.status === Status.WARN || r.status === Status.FAIL) lines.push(`        fix: ${r.fix}`);
  }
  lines.push('', verdict(results, connections));
  if (results.some((r) => r.sysctl && (r.status === Status.WARN || r.status === Status.FAIL))) {
    lines.push('sudo scripts/tune.sh applies and persists every sysctl fix at once (sysctl/99-ws-gateway.conf);');
    lines.push('scripts/tune.sh --dry-run shows what it would change.');
  }
  return lines.join('\n') + '\n';
}

function verdict(results, connections) {
  const failed = results.filter((r) => r.status === Status.FAIL).length;
  const unread = results.filter((r) => r.status === Status.UNKNOWN).length;
  const caveat = unread ? ` ${unread} limit${unread > 1 ? 's' : ''} could not be read and went unchecked.` : '';
  if (failed) return `FAIL: ${failed} limit${failed > 1 ? 's' : ''} would stop ${count(connections)} connections.${caveat}`;
  if (results.some((r) => r.status === Status.WARN)) {
    return `OK: no limit stops ${count(connections)} connections; the warnings above slow bursts or leave no headroom.${caveat}`;
  }
  return `OK: no limit stops ${count(connections)} connections.${caveat}`;
}
