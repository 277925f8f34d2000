// Every second: the cluster view (GET /stats on the metrics listener); every
// --sample-every seconds: one JSON line with each worker's RSS, heap, open
// descriptors and sockets (/proc/<pid>/fd), connections and worst event-loop
// delay since the last line, the primary's memory and channels, the message
// rates and the loadgens' live figures.
import { appendFileSync, readdirSync, readlinkSync } from 'node:fs';

const POLL_MS = 1000;

export class Sampler {
  /**
   * @param {object} options
   * @param {number} options.metricsPort
   * @param {string} options.file the JSON lines
   * @param {number} options.everyS
   * @param {import('./loadgens.js').Loadgen[]} options.loadgens
   */
  constructor({ metricsPort, file, everyS, loadgens }) {
    Object.assign(this, { metricsPort, file, everyS, loadgens });
    this.samples = [];
    this.startedAt = Date.now();
    this.worst = new Map(); // pid -> {p99, max} since the last line
    this.latest = null;
    this.errors = 0;
  }

  start() {
    this.poller = setInterval(() => this.poll(), POLL_MS);
    this.writer = setInterval(() => this.write(), this.everyS * 1000);
  }

  async poll() {
    try {
      const res = await fetch(`http://127.0.0.1:${this.metricsPort}/stats`);
      if (!res.ok) return;
      this.latest = await res.json();
    } catch {
      this.errors++;
      return;
    }
    for (const w of this.latest.workers) {
      const worst = this.worst.get(w.pid) ?? { p99: 0, max: 0 };
      worst.p99 = Math.max(worst.p99, w.eventLoopDelayMs.p99);
      worst.max = Math.max(worst.max, w.eventLoopDelayMs.max);
      this.worst.set(w.pid, worst);
    }
  }

  write() {
    const s = this.latest;
    if (s === null) return;
    const sample = {
      t: Math.round((Date.now() - this.startedAt) / 100) / 10,
      at: new Date().toISOString(),
      primary: { pid: s.primary.pid, rssBytes: s.primary.rssBytes, heapUsedBytes: s.primary.heapUsedBytes, channels: s.primary.channels, historyBytes: s.primary.historyBytes },
      workers: s.workers.map((w) => ({
        worker: w.worker,
        pid: w.pid,
        rssBytes: w.rssBytes,
        heapUsedBytes: w.heapUsedBytes,
        ...descriptors(w.pid),
        connections: w.connections,
        streams: w.streams,
        loopP99Ms: this.worst.get(w.pid)?.p99 ?? 0,
        loopMaxMs: this.worst.get(w.pid)?.max ?? 0,
        gcRuns: w.gcRuns,
        gcPauseMaxMs: w.gcPauseMs.max
      })),
      rates: s.rates,
      loadgens: Object.fromEntries(this.loadgens.map((l) => [l.name, l.live]))
    };
    this.worst.clear();
    this.samples.push(sample);
    appendFileSync(this.file, JSON.stringify(sample) + '\n');
  }

  stop() {
    clearInterval(this.poller);
    clearInterval(this.writer);
  }
}

/** Open descriptors of a process and how many of them are sockets; nulls once it is gone. */
function descriptors(pid) {
  const dir = `/proc/${pid}/fd`;
  try {
    const fds = readdirSync(dir);
    let sockets = 0;
    for (const fd of fds) {
      try {
        if (readlinkSync(`${dir}/${fd}`).startsWith('socket:')) sockets++;
      } catch {}
    }
    return { fds: fds.length, sockets };
  } catch {
    return { fds: null, sockets: null };
  }
}
