// handshake: connections opened as fast as the load generator can, no
// subscriptions: connects per second and the server CPU each handshake costs,
// split between the primary (accept and hand-over) and the workers (HTTP
// upgrade, WebSocket setup, welcome). Then, once they are gone, the same
// handshake in steady churn (../churn.js: --in-flight at a time, each opened
// once an earlier one closed, the close included), on the same server.
import { withServer } from '../servers.js';
import { Load, shortfall } from '../load.js';
import { idleCpuRate, busyCpuSince } from '../measure.js';
import { sampleTree } from '../proc-sampler.js';
import { runResult, loadSummary } from '../result.js';
import { NATIVE_CLIENTS } from '../clients.js';
import { churn } from '../churn.js';
import { untilEstablished } from '../established.js';

/**
 * @param {string[]} kinds servers to compare
 * @param {object} [as] the scenario's name, the gateway's extra `flags`, and `clients`: the protocol they speak (../clients.js)
 */
export async function handshake(opts, kinds, { scenario = 'handshake', flags: extra = [], clients = NATIVE_CLIENTS } = {}) {
  const results = [];
  const size = opts.handshakeConnections;
  for (const kind of kinds) {
    const flags = kind === 'ws' ? [] : ['--workers', String(opts.workers), ...extra];
    results.push(
      await withServer(kind, flags, async (server) => {
        const idle = await idleCpuRate(server);
        const before = sampleTree(server.pid);
        const load = new Load(server, { connections: size, rate: opts.handshakeRate, duration: 4, processes: Math.ceil(size / opts.perAgent), ...clients.load });
        const held = await load.held(server);
        const cpu = held ? busyCpuSince(server, before, idle) : undefined;
        const report = await load.report;
        const short = shortfall(report, held);
        if (short !== undefined) return runResult({ scenario, variant: kind, size, short, load: loadSummary(report) });
        if (!(await untilEstablished(server.port, (n) => n === 0))) return runResult({ scenario, variant: kind, size, short: 'the burst still open' });
        const churnedFrom = sampleTree(server.pid);
        await churn({ url: clients.url(server.url), count: opts.churn, inFlight: opts.inFlight, expect: clients.welcome });
        if (!(await untilEstablished(server.port, (n) => n === 0))) return runResult({ scenario, variant: kind, size, short: 'the churn still open' });
        const churned = busyCpuSince(server, churnedFrom, idle);
        return runResult({
          scenario,
          variant: kind,
          size,
          figures: {
            connectsPerSec: report.connectRate,
            cpuUsPerHandshake: cpu.totalUs / size,
            primaryUsPerHandshake: kind === 'ws' ? 0 : cpu.primaryUs / size,
            workersUsPerHandshake: kind === 'ws' ? cpu.primaryUs / size : cpu.workersUs / size,
            handshakeP99Ms: report.handshakeMs.p99,
            churnCpuUsPerHandshake: churned.totalUs / opts.churn
          },
          load: loadSummary(report)
        });
      })
    );
  }
  return results;
}
