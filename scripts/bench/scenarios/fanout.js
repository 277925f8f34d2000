// fan-out: one channel, every connection subscribed; one publish at a time
// reaches all of them (publisher.js). Deliveries per second, server CPU per
// delivery, and the latency each subscriber saw (measured by the load
// generator's agents from the send time in the data).
import { setTimeout as sleep } from 'node:timers/promises';
import { withServer } from '../servers.js';
import { Load, shortfall } from '../load.js';
import { idleCpuRate, busyCpuSince } from '../measure.js';
import { sampleTree } from '../proc-sampler.js';
import { publishInTurn } from '../publisher.js';
import { NATIVE_CLIENTS } from '../clients.js';
import { runResult, loadSummary } from '../result.js';

const GRACE_MS = 200; // the other workers finish writing the last publish

/**
 * @param {string[]} kinds servers to compare
 * @param {object} [as] `transport` of the subscribers (the publisher is a
 *   WebSocket), the scenario's name, the gateway's extra `flags`, and
 *   `clients`: the protocol of the subscribers and the publisher (../clients.js)
 */
export async function fanout(opts, kinds, { transport = 'ws', scenario = 'fan-out', flags: extra = [], clients = NATIVE_CLIENTS } = {}) {
  const size = opts.fanoutSubscribers;
  const results = [];
  for (const kind of kinds) {
    // Publishing faster than a person would is the point here: lift the per-connection cap.
    const flags = kind === 'ws' ? [] : ['--workers', String(opts.workers), '--max-publish-rate', '1000000', ...extra];
    results.push(
      await withServer(kind, flags, async (server) => {
        const load = new Load(server, {
          connections: size,
          transport,
          rate: opts.rate,
          channels: 1,
          duration: opts.fanoutSeconds + 5, // + /stats lag, idle CPU rate, last echo
          processes: Math.max(2, Math.ceil(size / opts.perAgent)),
          ...clients.load
        });
        if (!(await load.held(server, { subscribed: true }))) {
          const report = await load.report;
          return runResult({ scenario, variant: kind, size, short: shortfall(report, false), load: loadSummary(report) });
        }
        const idle = await idleCpuRate(server);
        const before = sampleTree(server.pid);
        const run = await publishInTurn(server.url, { channel: 'c0', seconds: opts.fanoutSeconds, messageSize: opts.messageSize, clients });
        await sleep(GRACE_MS);
        const cpu = busyCpuSince(server, before, idle);
        const report = await load.report;
        const deliveries = run.published * (size + 1); // the publisher is a subscriber too
        const short =
          run.error ??
          shortfall(report) ??
          (report.received < run.published * size ? `received ${report.received} of ${run.published * size}` : undefined) ??
          (report.outOfOrder + report.seqGaps > 0 ? `out of order ${report.outOfOrder}, gaps ${report.seqGaps}` : undefined);
        if (short !== undefined) return runResult({ scenario, variant: kind, size, short, load: loadSummary(report) });
        return runResult({
          scenario,
          variant: kind,
          size,
          figures: {
            publishes: run.published,
            deliveriesPerSec: deliveries / run.seconds,
            cpuUsPerDelivery: cpu.totalUs / deliveries,
            primaryUsPerDelivery: kind === 'ws' ? 0 : cpu.primaryUs / deliveries,
            latencyP50Ms: report.latencyMs.p50,
            latencyP99Ms: report.latencyMs.p99,
            latencyMaxMs: report.latencyMs.max
          },
          load: loadSummary(report)
        });
      })
    );
  }
  return results;
}
