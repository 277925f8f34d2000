// A throwaway PostgreSQL for the apps table's tests and measurements: its own
// data directory under the temp dir, its own free port on 127.0.0.1, trust
// authentication, no fsync; removed with everything in it when asked. Its
// server refuses to run as root, so it runs as the `postgres` user, which
// owns the directory while it lives.
import { spawn, execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync, existsSync, readdirSync } from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { require } from '../../lib/runtime/require.js';
import { eventually, onFreePort } from './gateway.js';

const { Client } = require('pg');

/** Where Debian puts the server's programs (the newest installed version). */
function binDir() {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  if (versions.length === 0) throw new Error('PostgreSQL is not installed (Debian: apt-get install postgresql)');
  return path.join(root, versions[0], 'bin');
}

export class PostgresServer {
  /** @returns {Promise<PostgresServer>} once it accepts connections; removed again if it cannot start */
  static start() {
    return onFreePort((port) => new PostgresServer(port));
  }

  constructor(port) {
    this.port = port;
    this.bin = binDir();
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'gateway-postgres-'));
    this.data = path.join(this.dir, 'data');
    this.url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    this.proc = undefined;
  }

  /** Starts the server: the first time on a fresh data directory, again (after stop()) on the same data and port. */
  async start() {
    const user = postgresUser();
    if (!existsSync(this.data)) {
      chownSync(this.dir, user.uid, user.gid);
      execFileSync(path.join(this.bin, 'initdb'), ['-D', this.data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8'], { ...user, stdio: 'ignore' });
    }
    const args = ['-D', this.data, '-p', String(this.port), '-h', '127.0.0.1', '-k', this.dir, '-c', 'fsync=off', '-c', 'full_page_writes=off', '-c', 'synchronous_commit=off'];
    // Started as the user itself, not through runuser: this.proc is the server, and a signal reaches it.
    this.proc = spawn(path.join(this.bin, 'postgres'), args, { ...user, stdio: 'ignore' });
    this.exited = once(this.proc, 'exit');
    const exited = this.exited.then(([code]) => {
      throw new Error(`postgres on ${this.port} exited (${code})`);
    });
    await Promise.race([eventually(() => this.query('SELECT 1').then(() => true, () => false), { what: `postgres on ${this.port}` }), exited]);
    exited.catch(() => {}); // its later exit (stop()) is expected
  }

  /** One statement on a short-lived connection. */
  async query(text, values) {
    const client = new Client({ connectionString: this.url });
    client.on('error', () => {});
    await client.connect();
    try {
      return await client.query(text, values);
    } finally {
      await client.end();
    }
  }

  /**
   * A session holding a read transaction on `table` (as a pg_dump, a report
   * or a forgotten BEGIN in psql would): its lock stays until release().
   * @returns {Promise<{release: () => Promise<void>}>}
   */
  async holdRead(table) {
    const client = new Client({ connectionString: this.url });
    client.on('error', () => {});
    await client.connect();
    await client.query('BEGIN');
    await client.query(`SELECT count(*) FROM ${table}`);
    return {
      release: async () => {
        await client.query('COMMIT').catch(() => {});
        await client.end();
      }
    };
  }

  /** SIGSTOP, SIGCONT, SIGKILL to the server (a pause, as clients see it, or a death). */
  signal(sig) {
    this.proc.kill(sig);
  }

  async stop() {
    if (this.proc !== undefined && this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill('SIGCONT');
      this.proc.kill('SIGQUIT'); // immediate shutdown: the server ends its backends itself
      const timer = setTimeout(() => this.proc.kill('SIGKILL'), 5000);
      await this.exited;
      clearTimeout(timer);
    }
  }

  async remove() {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The `postgres` account's ids and environment, which the server runs under (it refuses root). */
function postgresUser() {
  const id = (flag) => Number(execFileSync('id', [flag, 'postgres']));
  return { uid: id('-u'), gid: id('-g'), env: { ...process.env, HOME: os.tmpdir(), LC_ALL: 'C' } };
}
