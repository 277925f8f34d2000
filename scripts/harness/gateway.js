// Starts the real gateway (bin/gateway.js) as a child process on an ephemeral
// port and reads its JSON log lines, so tests and scripts (soak, bench) can
// wait for what it says. Lives outside test/ because the scripts use it too.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';
import readline from 'node:readline';
import { Waitlist } from './waitlist.js';

const GATEWAY = fileURLToPath(new URL('../../bin/gateway.js', import.meta.url));

/**
 * @param {string[]} args extra flags; --port 0, a free --metrics-port and --workers 2 are implied
 * @param {{env?: object, timeout?: number, prefix?: string[], gateway?: string}} [options] prefix: the
 *   command that runs the gateway's (`ip netns exec <name>`: ./netns.js); gateway: another
 *   checkout's bin/gateway.js (a benchmark's baseline)
 * @returns {Promise<Gateway>} once the primary logs `gateway ready`
 */
export async function startGateway(args = [], options = {}) {
  // A port free a moment ago may be taken (an outgoing connection's, another
  // test run's) before the gateway binds it: tried again with another.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(args, options);
    } catch (err) {
      if (attempt === 3 || !/EADDRINUSE/.test(err.message) || args.includes('--metrics-port')) throw err;
    }
  }
}

async function startOnce(args, { env = {}, timeout = 20000, prefix = [], gateway: bin = GATEWAY }) {
  const metricsPort = String(await freePort());
  const defaults = ['--port', '0', '--metrics-port', metricsPort, '--workers', '2'];
  for (let i = 0; i < defaults.length; i += 2) if (!args.includes(defaults[i])) args = [...args, defaults[i], defaults[i + 1]];
  const [command, ...rest] = [...prefix, process.execPath, bin, ...args];
  const proc = spawn(command, rest, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  });
  const gateway = new Gateway(proc);
  const ready = await gateway.waitForLog((l) => l.msg === 'gateway ready', timeout).catch(async (err) => {
    await gateway.stop();
    throw err;
  });
  gateway.port = ready.port;
  gateway.metricsPort = ready.metricsPort;
  gateway.url = `ws://127.0.0.1:${ready.port}${ready.path}`;
  gateway.http = `http://127.0.0.1:${ready.port}`;
  return gateway;
}

export class Gateway {
  constructor(proc) {
    this.proc = proc;
    this.stderr = '';
    this.lines = new Waitlist(() => `stderr: ${this.stderr.slice(-2000)}`);
    this.exited = once(proc, 'exit').then(([code, signal]) => ({ code, signal }));
    proc.stderr.on('data', (d) => (this.stderr += d));
    readline.createInterface({ input: proc.stdout }).on('line', (line) => {
      let entry;
      try {
        entry = JSON.parse(line);
      } catch {
        entry = { msg: line };
      }
      this.lines.push(entry);
    });
  }

  get logs() {
    return this.lines.items;
  }

  /** Resolves with the first log line (past or future) matching predicate. */
  waitForLog(predicate, timeout = 10000) {
    // A start that failed says why in its log (a taken port: "… (EADDRINUSE)", which startGateway tries again with another).
    const exit = this.exited.then(({ code, signal }) => {
      const fatal = this.logs.filter((l) => l.level >= 60).map((l) => `${l.msg}: ${l.err ?? ''}`);
      return `gateway exited (${code ?? signal}); ${fatal.length > 0 ? `log: ${fatal.join('; ')}; ` : ''}stderr: ${this.stderr.slice(-2000)}`;
    });
    return this.lines.wait(predicate, timeout, exit);
  }

  /** GET or POST on the public port; resolves {status, headers, body (parsed JSON when possible)}. */
  async request(path, { method = 'GET', headers = {}, body, port = this.port } = {}) {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers, body });
    const text = await res.text();
    let parsed = text;
    try {
      parsed = JSON.parse(text);
    } catch {}
    return { status: res.status, headers: res.headers, body: parsed };
  }

  /** The primary's Prometheus text. */
  async metrics() {
    const res = await fetch(`http://127.0.0.1:${this.metricsPort}/metrics`);
    return res.text();
  }

  /**
   * The sum of the metric's samples whose labels include every one of
   * `labels` (as written, e.g. '{reason="x"}' or '{transport="ws",app="a"}');
   * without labels, of all its samples. Undefined when none matches.
   */
  async metric(name, labels = '') {
    const wanted = labels === '' ? [] : labels.slice(1, -1).match(/\w+="(?:[^"\\]|\\.)*"/g);
    const values = (await this.metrics())
      .split('\n')
      .filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
      .filter((l) => {
        const own = l.startsWith(`${name}{`) ? l.slice(name.length + 1, l.lastIndexOf('}')).match(/\w+="(?:[^"\\]|\\.)*"/g) : [];
        return wanted.every((pair) => own.includes(pair));
      })
      .map((l) => Number(l.slice(l.lastIndexOf(' ') + 1)));
    return values.length === 0 ? undefined : values.reduce((a, b) => a + b, 0);
  }

  /** The pid of the newest ready worker in slot `worker`. */
  workerPid(worker) {
    return this.logs.findLast((l) => l.msg === 'worker ready' && l.worker === worker)?.workerPid;
  }

  signal(sig) {
    this.proc.kill(sig);
  }

  /** SIGKILLs the gateway and its workers if still running. */
  async stop() {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const pids = workerPids(this.logs);
    this.proc.kill('SIGKILL');
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
    await this.exited;
  }
}

/**
 * A server of the harness's (redis-server, PostgreSQL) on a port free a
 * moment ago: one taken before the server binds it (another test run's
 * server, an outgoing connection) is tried again with another, three times.
 * @param {(port: number) => {start: () => Promise<void>, remove: () => Promise<void>}} make
 */
export async function onFreePort(make) {
  for (let attempt = 1; ; attempt++) {
    const server = make(await freePort());
    try {
      await server.start();
      return server;
    } catch (err) {
      await server.remove();
      if (attempt === 3) throw err;
    }
  }
}

/** A port that was free a moment ago (--metrics-port 0 means disabled). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

function workerPids(logs) {
  return logs.filter((l) => l.msg === 'worker ready').map((l) => l.workerPid);
}

/** Polls `check` until it returns a truthy value or the deadline passes. */
export async function eventually(check, { timeout = 10000, interval = 50, what = 'condition' } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
      last = value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what} not met within ${timeout} ms (last: ${last?.message ?? last})`);
    await new Promise((r) => setTimeout(r, interval));
  }
}
