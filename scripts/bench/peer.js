// A Pusher-protocol peer server (Sockudo) started as a child process on a free
// loopback port, with one app configured, for the side-by-side benchmark. It
// has the parts of a benchmark Server the peer benchmark uses: pid, port,
// url, stop(). Sockudo reads a TOML file given by --config; its limits and
// rate limiter are lifted so the load is held, not refused.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { track, killTree } from './children.js';
import { freePort } from '../harness/gateway.js';

const READY_TIMEOUT_MS = 30000;

/** Sockudo's configuration for one app on 127.0.0.1:port. */
function peerConfig(port, app) {
  return `host = "127.0.0.1"
port = ${port}
debug = false

[app_manager]
driver = "memory"

[app_manager.array]
[[app_manager.array.apps]]
id = "${app.appId}"
key = "${app.key}"
secret = "${app.secret}"
enabled = true
enable_client_messages = false
max_connections = 1000000
max_backend_events_per_second = 1000000
max_client_events_per_second = 1000000
max_read_requests_per_second = 1000000

[rate_limiter]
enabled = false

[metrics]
enabled = false
`;
}

export class Peer {
  /**
   * @param {string} bin the peer's executable
   * @param {{appId: string, key: string, secret: string}} app
   */
  static async start(bin, app) {
    const port = await freePort();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-peer-'));
    const config = path.join(dir, 'config.toml');
    writeFileSync(config, peerConfig(port, app));
    const proc = track(spawn(bin, ['--config', config], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] }));
    const peer = new Peer(proc, port, dir);
    try {
      await peer.ready();
    } catch (err) {
      await peer.stop();
      throw err;
    }
    return peer;
  }

  constructor(proc, port, dir) {
    this.kind = 'peer';
    this.proc = proc;
    this.pid = proc.pid;
    this.port = port;
    this.dir = dir;
    this.url = `ws://127.0.0.1:${port}/`;
    this.stderr = '';
    proc.stderr.on('data', (d) => (this.stderr = (this.stderr + d).slice(-4000)));
  }

  /** Resolves once the port accepts a connection. */
  async ready() {
    const deadline = performance.now() + READY_TIMEOUT_MS;
    while (performance.now() < deadline) {
      if (this.proc.exitCode !== null) throw new Error(`peer exited (${this.proc.exitCode}) before ready: ${this.stderr}`);
      if (await accepts(this.port)) return;
      await sleep(100);
    }
    throw new Error(`peer not ready within ${READY_TIMEOUT_MS} ms: ${this.stderr}`);
  }

  async stop() {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      const exited = once(this.proc, 'exit');
      killTree(this.pid);
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function accepts(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
