// handshake: connections opened as fast as the load generator can, no
// subscriptions: connects per second and the server CPU each handshake costs,
// split between the primary (accept and hand-over) and the workers (HTTP
// upgrade, WebSocket setup, welcome).
import { withServer } from '../servers.js';
import { Load, shortfall } from '../load.js';
import { idleCpuRate, busyCpuSince } from '../measure.js';
import { sampleTree } from '../proc-sampler.js';
import { runResult, loadSummary } from '../result.js';

export async function handshake(opts, kinds) {
  const results = [];
  const size = opts.handshakeConnections;
  for (const kind of kinds) {
    const flags = kind === 'ws' ? [] : ['--workers', String(opts.workers)];
    results.push(
      await withServer(kind, flags, async (server) => {
        const idle = await idleCpuRate(server);
        const before = sampleTree(server.pid);
        const load = new Load(server, { connections: size, rate: opts.handshakeRate, duration: 4, processes: Math.ceil(size / opts.perAgent) });
        const held = await load.held(server);
        const cpu = held ? busyCpuSince(server, before, idle) : undefined;
        const report = await load.report;
        const short = shortfall(report, held);
        if (short !== undefined) return runResult({ scenario: 'handshake', variant: kind, size, short, load: loadSummary(report) });
        return runResult({
          scenario: 'handshake',
          variant: kind,
          size,
          figures: {
            connectsPerSec: report.connectRate,
            cpuUsPerHandshake: cpu.totalUs / size,
            primaryUsPerHandshake: kind === 'ws' ? 0 : cpu.primaryUs / size,
            workersUsPerHandshake: kind === 'ws' ? cpu.primaryUs / size : cpu.workersUs / size,
            handshakeP99Ms: report.handshakeMs.p99
          },
          load: loadSummary(report)
        });
      })
    );
  }
  return results;
}
