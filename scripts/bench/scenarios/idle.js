// idle: connections held with a subscription each and keepalive running.
// What one connection costs: user RSS (primary and workers together, less the
// empty server), V8 heap, and kernel memory per socket.
import { setTimeout as sleep } from 'node:timers/promises';
import { withServer } from '../servers.js';
import { Load, shortfall } from '../load.js';
import { memoryOf, workersReporting } from '../measure.js';
import { kernelPerSocket } from '../sockstat.js';
import { runResult, loadSummary } from '../result.js';
import { NATIVE_CLIENTS } from '../clients.js';

const CHANNELS = 100;

/**
 * Holds `size` connections on one server and measures what they cost.
 * @param {object} o
 * @param {string} o.scenario name in the report
 * @param {string} o.variant label in the report
 * @param {string} o.kind server kind (servers.js)
 * @param {string[]} o.flags server flags
 * @param {number} o.workers workers the server runs (1 for plain ws)
 * @param {number} o.size connections
 * @param {object} o.opts the benchmark's options
 * @param {number} [o.holdS] seconds to hold before measuring
 * @param {string[]} [o.nodeArgs] Node flags for the server
 * @param {'ws'|'sse'} [o.transport] what the connections are: WebSockets or SSE streams
 * @param {object} [o.clients] the protocol the connections speak (../clients.js): native unless given
 * @param {(server, holdS) => Promise<object>} [o.during] measures over the hold; resolves more figures
 */
export async function holdIdle({ scenario, variant, kind, flags, workers, size, opts, holdS = opts.hold, nodeArgs, during = hold, transport = 'ws', clients = NATIVE_CLIENTS }) {
  return withServer(
    kind,
    flags,
    async (server) => {
      await workersReporting(server, workers);
      await sleep(opts.settle * 1000);
      const empty = await memoryOf(server);
      const load = new Load(server, {
        connections: size,
        transport,
        rate: opts.rate,
        channels: CHANNELS,
        duration: holdS + 2.5, // the measurements end within 2.5 s of the ramp's end
        processes: Math.ceil(size / opts.perAgent),
        ...clients.load
      });
      const held = await load.held(server, { subscribed: true });
      const extra = held ? await during(server, holdS) : undefined;
      const full = held ? await memoryOf(server) : undefined;
      const report = await load.report;
      const short = shortfall(report, held);
      if (short !== undefined) return runResult({ scenario, variant, size, short, load: loadSummary(report) });
      const kernel = kernelPerSocket(empty.kernel, full.kernel);
      // Loopback holds both ends; when other work on the machine moved the socket count too, the delta is not ours.
      const clean = Math.abs(kernel.sockets - 2 * size) <= 0.1 * 2 * size;
      const kernelFigure = (bytes) => (clean ? bytes : 'noisy');
      return runResult({
        scenario,
        variant,
        size,
        figures: {
          userRssPerConnBytes: (full.rssBytes - empty.rssBytes) / size,
          ...(kind === 'ws' ? {} : { primaryRssPerConnBytes: (full.primaryRssBytes - empty.primaryRssBytes) / size }),
          heapPerConnBytes: (full.heapBytes - empty.heapBytes) / size,
          kernelPerSocketBytes: kernelFigure(kernel.tcpMemPerSocket + kernel.slabPerSocket),
          kernelTcpMemPerSocketBytes: kernelFigure(kernel.tcpMemPerSocket),
          kernelSlabPerSocketBytes: kernelFigure(kernel.slabPerSocket),
          kernelSocketCachesPerSocketBytes: kernelFigure(kernel.socketCachesPerSocket),
          socketsSeen: kernel.sockets,
          serverRssMiB: full.rssBytes / 1048576,
          ...extra
        },
        load: loadSummary(report)
      });
    },
    nodeArgs
  );
}

async function hold(server, holdS) {
  await sleep(holdS * 1000);
  return {};
}

/**
 * The idle comparison at one size: the gateway and the baselines side by side.
 * @param {Array<{kind: string, label?: string, nodeArgs?: string[]}>} variants
 */
export async function idle(opts, size, variants, workers) {
  const results = [];
  for (const { kind, label = kind, nodeArgs } of variants) {
    // Past 15k a worker, sticky-by-IP from 16 source addresses could put more
    // than the 20k open files a process may have on one worker: spread evenly.
    const flags = kind === 'ws' ? [] : ['--workers', String(workers), ...(size > workers * 15000 - 1 ? ['--balance', 'even'] : [])];
    results.push(
      await holdIdle({ scenario: `idle ${size}`, variant: label, kind, flags, workers: kind === 'ws' ? 1 : workers, size, opts, nodeArgs })
    );
  }
  return results;
}
