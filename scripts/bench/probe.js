// A probe on the server's public port: one kept-alive HTTP connection (so on
// one worker throughout) asking GET /health every PROBE_EVERY_MS, each answer's
// wait recorded. What a client of the same worker sees while the server is
// busy elsewhere (a mass close), beside the worker's own event-loop delay.
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { quantile } from '../../lib/loadgen/quantile.js';

const PROBE_EVERY_MS = 10;

export class Probe {
  /** @param {{port: number}} server */
  constructor(server) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    this.port = server.port;
    this.waits = [];
    this.running = true;
    this.done = this.loop();
  }

  ask() {
    return new Promise((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port: this.port, path: '/health', agent: this.agent }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
    });
  }

  async loop() {
    await this.ask(); // the connection made before anything is measured
    while (this.running) {
      const start = performance.now();
      await this.ask();
      this.waits.push(performance.now() - start);
      await sleep(PROBE_EVERY_MS);
    }
  }

  /** @returns {Promise<{maxMs: number, p99Ms: number, answers: number}>} */
  async stop() {
    this.running = false;
    await this.done;
    this.agent.destroy();
    const ms = (q) => Math.round(quantile(this.waits, q) * 10) / 10;
    return { maxMs: ms(1), p99Ms: ms(0.99), answers: this.waits.length };
  }
}
