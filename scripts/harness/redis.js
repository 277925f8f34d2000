// A throwaway redis-server for the Redis engine's tests and the soak/bench: its own free port,
// no persistence, a temp dir; stopped (and its data gone) when asked. Extra
// arguments make it a replica or a cluster node (./redis-topologies.js).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { eventually, onFreePort } from './gateway.js';

export class RedisServer {
  /**
   * @param {string[]} [extra] more redis-server arguments
   * @returns {Promise<RedisServer>} once it accepts commands
   */
  static start(extra = []) {
    return onFreePort((port) => new RedisServer(port, extra));
  }

  constructor(port, extra = []) {
    this.port = port;
    this.extra = extra;
    this.address = `127.0.0.1:${port}`;
    this.url = `redis://127.0.0.1:${port}`;
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'gateway-redis-'));
    this.proc = undefined;
  }

  /** Starts it again on the same port, empty. */
  async start() {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, '--enable-debug-command', 'local', ...this.extra];
    this.proc = spawn('redis-server', args, { stdio: 'ignore' });
    this.exited = once(this.proc, 'exit');
    // The server that answers must be this one, not another that holds the port.
    const ours = () => this.command('INFO', 'server').then((info) => info.includes(`process_id:${this.proc.pid}\r\n`));
    const exited = this.exited.then(([code]) => {
      throw new Error(`redis-server on ${this.port} exited (${code})`);
    });
    await Promise.race([eventually(ours, { what: `redis-server on ${this.port}` }), exited]);
    exited.catch(() => {}); // its later exit (a test's kill) is expected
  }

  command(...args) {
    return command(this.url, ...args);
  }

  /** SIGSTOP, SIGCONT, SIGKILL: a pause (a partition, as the others see it) or a death. */
  signal(sig) {
    this.proc.kill(sig);
  }

  async stop() {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill('SIGCONT'); // a paused one must die too
      this.proc.kill('SIGKILL');
      await this.exited;
    }
  }

  async remove() {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** One command on a short-lived connection to `url` (a redis-server or a redis-sentinel). */
export async function command(url, ...args) {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    return await client.call(...args);
  } finally {
    client.disconnect();
  }
}
