// Starts the servers under test as child processes on free loopback ports and
// stops them, whatever happens to the benchmark: every process started here is
// killed, with its workers, before this process exits.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { track, killTree } from './children.js';
import { freePort } from '../harness/gateway.js';

const root = (file) => fileURLToPath(new URL(`../../${file}`, import.meta.url));

/** The servers a scenario can start, by name. */
export const SERVERS = {
  gateway: { script: root('bin/gateway.js'), label: 'gateway (sticky primary)' },
  'gateway-even': { script: root('bin/gateway.js'), flags: ['--balance', 'even'], label: 'gateway --balance even' },
  'gateway-reuseport': { script: root('bin/gateway.js'), flags: ['--balance', 'reuseport'], label: 'gateway --balance reuseport' },
  ws: { script: root('scripts/baseline-ws.js'), label: 'plain ws (1 process)', ownPort: true },
  'pusher-ws': { script: root('scripts/baseline-pusher.js'), label: 'plain ws speaking Pusher (1 process)', ownPort: true },
  cluster: { script: root('scripts/baseline-cluster.js'), label: 'node cluster (round robin)' }
};

const READY_TIMEOUT_MS = 30000;

export class Server {
  /**
   * @param {keyof SERVERS} kind
   * @param {string[]} flags gateway flags (the baselines take the same ones)
   * @param {string[]} [nodeArgs] Node flags for the main process, which the gateway passes on to its workers
   * @param {string} [script] the kind's script from another checkout (an older gateway side by side)
   */
  static async start(kind, flags = [], nodeArgs = [], script = SERVERS[kind].script) {
    const port = await freePort();
    // The gateway and the cluster baseline serve /stats on the metrics port; the plain ws baselines (ownPort) take no metrics port.
    const metricsPort = SERVERS[kind].ownPort ? 0 : await freePort();
    const { flags: own = [] } = SERVERS[kind];
    const args = [...nodeArgs, script, '--port', String(port), '--host', '127.0.0.1', ...own, ...flags];
    if (metricsPort !== 0) args.push('--metrics-port', String(metricsPort));
    const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const server = new Server(kind, track(proc), port, metricsPort);
    await server.ready;
    return server;
  }

  constructor(kind, proc, port, metricsPort) {
    this.kind = kind;
    this.proc = proc;
    this.pid = proc.pid;
    this.port = port;
    this.metricsPort = metricsPort;
    this.url = `ws://127.0.0.1:${port}/ws`;
    this.stderr = '';
    this.lines = []; // non-JSON output: V8's --trace-gc lines when asked for
    proc.stderr.on('data', (d) => (this.stderr = (this.stderr + d).slice(-4000)));
    const exited = once(proc, 'exit');
    this.ready = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${kind} not ready within ${READY_TIMEOUT_MS} ms: ${this.stderr}`)), READY_TIMEOUT_MS);
      exited.then(([code, signal]) => reject(new Error(`${kind} exited (${code ?? signal}) before ready: ${this.stderr}`)));
      readline.createInterface({ input: proc.stdout }).on('line', (line) => {
        if (!line.startsWith('{')) return void this.lines.push(line);
        if (/"msg":"(gateway|baseline) ready"/.test(line)) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    this.ready.catch(() => this.stop());
  }

  /** GET /stats: {workers: [...], totals: {...}}. */
  async stats() {
    const res = await fetch(`http://127.0.0.1:${this.metricsPort || this.port}/stats`);
    if (!res.ok) throw new Error(`${this.kind} /stats answered ${res.status}`);
    return res.json();
  }

  /** One counter from the primary's Prometheus text, summed over its label sets. */
  async metric(name) {
    const text = await (await fetch(`http://127.0.0.1:${this.metricsPort}/metrics`)).text();
    let sum = 0;
    for (const line of text.split('\n')) if (line.startsWith(name + ' ') || line.startsWith(name + '{')) sum += Number(line.split(' ').pop());
    return sum;
  }

  /** SIGKILLs the server and its workers: after a scenario there is nothing to drain. */
  async stop() {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const exited = once(this.proc, 'exit');
    killTree(this.pid);
    await exited;
  }
}

/**
 * Starts a server, runs `use(server)`, and stops the server whatever happened.
 * @param {string} [script] the kind's script from another checkout (Server.start)
 */
export async function withServer(kind, flags, use, nodeArgs, script) {
  const server = await Server.start(kind, flags, nodeArgs, script);
  try {
    return await use(server);
  } finally {
    await server.stop();
  }
}
