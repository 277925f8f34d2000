// Measurements shared by the scenarios: memory snapshots of a server, its
// idle CPU rate, and the per-second event-loop figures its workers report.
import { setTimeout as sleep } from 'node:timers/promises';
import { sampleTree, cpuBetween, rssOf } from './proc-sampler.js';
import { sampleKernel } from './sockstat.js';

const WARMUP_MS = 2500;

/** Resolves once /stats lists `count` workers (the gateway's fill in within two seconds). */
export async function workersReporting(server, count, timeoutMs = 10000) {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const stats = await server.stats().catch(() => undefined);
    if (stats?.workers.length >= count) return stats;
    if (performance.now() > deadline) throw new Error(`${server.kind}: ${count} workers not reporting within ${timeoutMs} ms`);
    await sleep(200);
  }
}

/** User RSS of the whole tree and of its root, V8 heap in use summed over workers, and the kernel's socket memory. */
export async function memoryOf(server) {
  const stats = await server.stats();
  const tree = sampleTree(server.pid);
  return {
    rssBytes: rssOf(tree),
    primaryRssBytes: tree.processes.get(server.pid)?.rssBytes ?? 0,
    heapBytes: stats.workers.reduce((sum, w) => sum + w.heapUsedBytes, 0),
    kernel: sampleKernel()
  };
}

/** CPU µs per second the server spends with nothing to do (timers, stats, keepalive). */
export async function idleCpuRate(server, ms = 1000) {
  const before = sampleTree(server.pid);
  await sleep(ms);
  const used = cpuBetween(before, sampleTree(server.pid), server.pid);
  return { primaryUs: used.primaryUs / used.seconds, workersUs: used.workersUs / used.seconds };
}

/** CPU used since `before`, less what the server would have spent idle over the same time. */
export function busyCpuSince(server, before, idle) {
  const used = cpuBetween(before, sampleTree(server.pid), server.pid);
  const primaryUs = Math.max(0, used.primaryUs - idle.primaryUs * used.seconds);
  const workersUs = Math.max(0, used.workersUs - idle.workersUs * used.seconds);
  return { primaryUs, workersUs, totalUs: primaryUs + workersUs, seconds: used.seconds };
}

/**
 * Reads /stats until stopped. The gateway's figures are per worker-second and
 * change once a second (`uptimeS` tells a new one); the plain ws baseline's
 * cover the time since the previous read. The gateway's reach /stats up to two
 * seconds late, so readings of the first WARMUP_MS are dropped: what is left
 * covers the watched time and nothing before it. A worker's `worst` (its
 * maximum since start) catches a second the readings missed.
 */
export class StatsWatch {
  constructor(server) {
    this.readings = [];
    this.first = undefined;
    this.running = this.watch(server);
  }

  async watch(server) {
    const keepFrom = performance.now() + WARMUP_MS;
    this.stopped = false;
    while (!this.stopped) {
      await sleep(300);
      const stats = await server.stats().catch(() => undefined);
      if (stats === undefined || performance.now() < keepFrom) continue;
      if (stats.uptimeS !== undefined && stats.uptimeS === this.readings.at(-1)?.uptimeS) continue;
      this.first ??= stats;
      this.readings.push(stats);
    }
  }

  /** @returns {Promise<{p99Ms: number, maxMs: number, readings: number}>} the worst worker-second */
  async stop() {
    this.stopped = true;
    await this.running;
    let p99Ms = 0;
    let maxMs = 0;
    for (const { workers } of this.readings) {
      for (const { eventLoopDelayMs: d } of workers) {
        p99Ms = Math.max(p99Ms, d.p99);
        maxMs = Math.max(maxMs, d.max);
      }
    }
    const worstAtStart = new Map(this.first?.workers.map((w) => [w.worker, w.eventLoopDelayMs.worst]));
    for (const w of this.readings.at(-1)?.workers ?? []) {
      if (w.eventLoopDelayMs.worst > (worstAtStart.get(w.worker) ?? Infinity)) maxMs = Math.max(maxMs, w.eventLoopDelayMs.worst);
    }
    return { p99Ms, maxMs, readings: this.readings.length };
  }
}

export function sumOf(values) {
  return values.reduce((a, b) => a + b, 0);
}
