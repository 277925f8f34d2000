// The real load generator (bin/loadgen.js) as child processes: the holders
// (WebSocket, publishing over WebSocket), the SSE streams (publishing over
// HTTP), both with reconnect storms and recovery, and a churn loop of short runs. Each
// one's progress line (stderr, every 5 s) gives the live figures; its JSON
// report the final ones.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { track } from '../bench/children.js';

const LOADGEN = fileURLToPath(new URL('../../bin/loadgen.js', import.meta.url));
const PROGRESS = /open (\d+)\/\d+ .* received (\d+)/;

export class Loadgen {
  /**
   * @param {string} name
   * @param {string[]} args loadgen flags (--json is added)
   * @param {string} out the folder for its report
   */
  constructor(name, args, out) {
    this.name = name;
    this.file = path.join(out, `loadgen-${name}.json`);
    this.live = { open: 0, received: 0 };
    this.stderr = '';
    this.proc = track(spawn(process.execPath, [LOADGEN, ...args, '--json', this.file], { stdio: ['ignore', 'ignore', 'pipe'] }));
    readline.createInterface({ input: this.proc.stderr }).on('line', (line) => {
      const m = PROGRESS.exec(line);
      if (m) this.live = { open: Number(m[1]), received: Number(m[2]) };
      else this.stderr = (this.stderr + line + '\n').slice(-4000);
    });
    this.exited = once(this.proc, 'exit').then(([code, signal]) => ({ code, signal }));
  }

  /** Resolves with its JSON report, or {error} when it wrote none. */
  async report() {
    const { code, signal } = await this.exited;
    try {
      return { exitCode: code, ...JSON.parse(readFileSync(this.file, 'utf8')) };
    } catch {
      return { exitCode: code ?? signal, error: `no report; stderr: ${this.stderr.slice(-1000)}` };
    }
  }

  stop() {
    this.proc.kill('SIGKILL');
  }
}

/** Common flags for a run of `seconds` against `gateway`; with a JWT secret each connection signs its token. */
function base(gateway, o, { connections, seconds, addresses, jwtSecret }) {
  const rate = Math.max(100, Math.min(2000, connections / 5));
  const flags = ['--url', gateway.url, '--connections', String(connections), '--rate', String(rate), '--duration', String(seconds), '--local-address', addresses];
  if (jwtSecret) flags.push('--jwt-secret', jwtSecret, '--jwt-sub-prefix', 'soak-');
  return flags;
}

/** The WebSocket holders and, if asked, the SSE streams; both hold for about the whole run. */
export function startHolders(gateway, o, { apiKey, jwtSecret }) {
  const seconds = Math.max(5, o.durationS - rampS(o.connections));
  const holders = new Loadgen(
    'ws',
    [
      ...base(gateway, o, { connections: o.connections, seconds, addresses: '127.0.0.2-127.0.0.9', jwtSecret }),
      '--channels', String(o.channels),
      '--publish-rate', String(o.publishRate),
      '--reconnect-every', String(o.reconnectEvery)
    ],
    o.out
  );
  const all = [holders];
  if (o.sseStreams > 0) {
    all.push(
      new Loadgen(
        'sse',
        [
          ...base(gateway, o, { connections: o.sseStreams, seconds: Math.max(5, o.durationS - rampS(o.sseStreams)), addresses: '127.0.0.10-127.0.0.11', jwtSecret }),
          '--transport', 'sse',
          '--channels', String(Math.min(o.channels, 10)),
          // Channels of their own (s0, s1, ...): neither loadgen receives the other's publishes, so each one's `lost` is exact.
          '--channel-prefix', 's',
          '--publish-rate', String(Math.max(1, o.publishRate / 4)),
          '--publish-via', 'http',
          '--api-key', apiKey,
          '--reconnect-every', String(o.reconnectEvery)
        ],
        o.out
      )
    );
  }
  return all;
}

/** Short loadgen runs back to back until `stopped()`: connects and disconnects all the time. */
export async function churn(gateway, o, { jwtSecret }, stopped) {
  const figures = { runs: 0, opened: 0, failedRuns: 0 };
  if (o.churnConnections === 0) return figures;
  while (!stopped()) {
    const run = new Loadgen('churn', base(gateway, o, { connections: o.churnConnections, seconds: 1, addresses: '127.0.0.12-127.0.0.13', jwtSecret }), o.out);
    const report = await run.report();
    figures.runs++;
    figures.opened += report.open ?? 0;
    if (report.exitCode !== 0) figures.failedRuns++;
  }
  return figures;
}

function rampS(connections) {
  return connections / Math.max(100, Math.min(2000, connections / 5));
}
