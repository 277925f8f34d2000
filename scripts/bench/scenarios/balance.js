// balance: how connections spread over 4 workers, by balancing mode (the
// primary's choice under ip and even, the kernel's under reuseport) and by how
// many source addresses the clients have (one address is what a load
// balancer without PROXY protocol looks like).
import { withServer } from '../servers.js';
import { Load, shortfall } from '../load.js';
import { runResult, loadSummary } from '../result.js';

const WORKERS = 4;

export async function balance(opts) {
  const size = opts.balanceConnections;
  const results = [];
  for (const mode of ['ip', 'even', 'reuseport']) {
    for (const sources of ['127.0.0.1', '127.0.0.1-127.0.0.16']) {
      const variant = `--balance ${mode}, ${sources.includes('-') ? 16 : 1} source IP${sources.includes('-') ? 's' : ''}`;
      results.push(
        await withServer('gateway', ['--workers', String(WORKERS), '--balance', mode], async (server) => {
          const load = new Load(server, { connections: size, rate: opts.rate, duration: 3, 'local-address': sources });
          const held = await load.held(server);
          const { workers } = held ? await server.stats() : { workers: [] };
          const report = await load.report;
          const short = shortfall(report, held);
          if (short !== undefined) return runResult({ scenario: 'balance', variant, size, short, load: loadSummary(report) });
          const counts = workers.map((w) => w.connections);
          return runResult({
            scenario: 'balance',
            variant,
            size,
            figures: { perWorker: counts.join(' / '), busiestVsMean: Math.max(...counts) / (size / WORKERS) },
            load: loadSummary(report)
          });
        })
      );
    }
  }
  return results;
}
