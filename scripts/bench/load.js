// Drives a server with bin/loadgen and tells when the server holds what was
// asked, so a scenario can take its measurements while the load is held.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { track } from './children.js';

const LOADGEN = fileURLToPath(new URL('../../bin/loadgen.js', import.meta.url));
const POLL_MS = 250;

/** Source addresses for every run: each has its own ephemeral port range. */
export const SOURCES = '127.0.0.1-127.0.0.16';

export class Load {
  /**
   * Starts bin/loadgen against `server`.
   * @param {import('./servers.js').Server} server
   * @param {object} flags loadgen flags by name, e.g. {connections: 15000, duration: 10}
   */
  constructor(server, flags) {
    const args = [LOADGEN, '--url', server.url, '--json', '-'];
    for (const [name, value] of Object.entries({ 'local-address': SOURCES, ...flags })) args.push(`--${name}`, String(value));
    this.proc = track(spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
    this.target = flags.connections;
    let stdout = '';
    this.stderr = '';
    this.proc.stdout.on('data', (d) => (stdout += d));
    this.proc.stderr.on('data', (d) => (this.stderr = (this.stderr + d).slice(-4000)));
    this.exited = false;
    this.report = once(this.proc, 'exit').then(() => {
      this.exited = true;
      try {
        return JSON.parse(stdout);
      } catch {
        return { shortfalls: [`loadgen printed no report: ${this.stderr.trim().split('\n').pop()}`] };
      }
    });
  }

  /**
   * Resolves once the server reports `target` connections (and as many
   * subscriptions when `subscribed`), or false when loadgen ended first or
   * `timeoutMs` passed.
   */
  async held(server, { subscribed = false, timeoutMs = 120000 } = {}) {
    const deadline = performance.now() + timeoutMs;
    while (!this.exited && performance.now() < deadline) {
      const { totals } = await server.stats().catch(() => ({ totals: {} }));
      if (totals.connections >= this.target && (!subscribed || totals.subscriptions >= this.target)) return true;
      await sleep(POLL_MS);
    }
    return false;
  }
}

/**
 * Whether a loadgen report shows the run did what was asked.
 * @param {boolean} [held] whether the server was seen holding the target
 * @returns {string|undefined} why it fell short
 */
export function shortfall(report, held = true) {
  if (!held) return `server never held ${report.target ?? 'its target'}: ${shortfall(report) ?? 'timeout'}`;
  if (report.shortfalls?.length) return report.shortfalls.join('; ');
  if (report.open < report.target) return `open ${report.open} < ${report.target}`;
  return undefined;
}
