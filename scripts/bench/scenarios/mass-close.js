// mass-close: one worker holding every connection (one subscription each)
// while the load generator closes them all at once, with the closing
// handshake, from --mass-close-processes client processes at once. The worst
// event-loop delay of the worker while the burst is handled, the slowest
// answer to a probe on the same worker (./probe.js), and the server CPU per
// close.
import { setTimeout as sleep } from 'node:timers/promises';
import { withServer } from '../servers.js';
import { Load, shortfall } from '../load.js';
import { StatsWatch, idleCpuRate, busyCpuSince, workersReporting } from '../measure.js';
import { sampleTree } from '../proc-sampler.js';
import { runResult, loadSummary } from '../result.js';
import { Probe } from '../probe.js';

const CHANNELS = 100;
const HOLD_S = 5; // held this long so the watch's readings start after the ramp
const AFTER_MS = 2500; // a worker's figures reach /stats up to two seconds late

export async function massClose(opts, kinds) {
  const results = [];
  const size = opts.massCloseConnections;
  for (const kind of kinds) {
    const flags = kind === 'ws' ? [] : ['--workers', '1'];
    results.push(
      await withServer(kind, flags, async (server) => {
        await workersReporting(server, 1);
        const load = new Load(server, { connections: size, rate: opts.rate, channels: CHANNELS, duration: HOLD_S, processes: Math.max(opts.massCloseProcesses, Math.ceil(size / opts.perAgent)) });
        const held = await load.held(server, { subscribed: true });
        if (!held) return runResult({ scenario: 'mass-close', variant: kind, size, short: shortfall(await load.report, false) });
        const watch = new StatsWatch(server);
        const idle = await idleCpuRate(server);
        const probe = new Probe(server);
        const before = sampleTree(server.pid);
        const report = await load.report; // the agents close everything at the end of the hold
        const closed = await allClosed(watch);
        const cpu = busyCpuSince(server, before, idle);
        const probed = await probe.stop();
        await sleep(AFTER_MS);
        const delay = await watch.stop();
        const short = shortfall(report) ?? (closed ? undefined : 'connections still open 30 s after the close');
        if (short !== undefined) return runResult({ scenario: 'mass-close', variant: kind, size, short, load: loadSummary(report) });
        return runResult({
          scenario: 'mass-close',
          variant: kind,
          size,
          figures: {
            eventLoopMaxMs: delay.maxMs,
            probeMaxMs: probed.maxMs,
            probeP99Ms: probed.p99Ms,
            cpuUsPerClose: cpu.totalUs / size
          },
          load: loadSummary(report)
        });
      })
    );
  }
  return results;
}

/**
 * Resolves true once the watch reads no connection, false after 30 s. It
 * does not read /stats itself: the plain ws server resets its figures on each
 * read, and the watch must see them all.
 */
async function allClosed(watch) {
  const deadline = performance.now() + 30000;
  while (performance.now() < deadline) {
    if (watch.readings.at(-1)?.totals.connections === 0) return true;
    await sleep(100);
  }
  return false;
}
