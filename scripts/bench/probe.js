// A probe on the server's public port: one kept-alive HTTP connection (so on
// one worker throughout) asking GET /health every PROBE_EVERY_MS, each answer's
// wait recorded. What a client of the same worker sees while the server is
// busy elsewhere (a mass close), beside the worker's own event-loop delay.
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

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
    const sorted = [...this.waits].sort((a, b) => a - b);
    const at = (q) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;
    return { maxMs: Math.round(at(1) * 10) / 10, p99Ms: Math.round(at(0.99) * 10) / 10, answers: sorted.length };
  }
}
