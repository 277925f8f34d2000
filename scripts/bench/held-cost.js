// What opening and then holding `size` clients costs a server: CPU per
// connection over the opening (less the idle rate), and memory per idle
// connection once the server's periodic GC (the scenarios start it with
// --gc-interval) has run over what the handshakes left behind. A few clients
// come and go first, so the code they run is compiled (and, for tokens, the
// jose module loaded) before the empty server is measured: that is a cost per
// worker, not per connection.
import { setTimeout as sleep } from 'node:timers/promises';
import { withServer } from './servers.js';
import { idleCpuRate, busyCpuSince, memoryOf, workersReporting } from './measure.js';
import { sampleTree } from './proc-sampler.js';
import { openClients, closeClients } from './ws-clients.js';
import { runResult } from './result.js';

export const GC_INTERVAL_MS = 1000;
const WARM_UP = 200; // clients per worker

/**
 * @param {object} o
 * @param {string} o.scenario
 * @param {string} o.variant
 * @param {string[]} o.flags gateway flags
 * @param {number} o.workers
 * @param {number} o.size connections
 * @param {(server) => string} o.url where the clients connect
 * @param {object} [o.clientOptions] for openClients (token, wsOptions)
 */
export function heldCost({ scenario, variant, flags, workers, size, url, clientOptions }) {
  const allFlags = ['--workers', String(workers), '--gc-interval', String(GC_INTERVAL_MS), ...flags];
  return withServer('gateway', allFlags, async (server) => {
    await workersReporting(server, workers);
    try {
      closeClients((await openClients(url(server), WARM_UP * workers, clientOptions)).clients);
    } catch (err) {
      return runResult({ scenario, variant, size, short: `warm-up: ${err.message}` });
    }
    await sleep(2 * GC_INTERVAL_MS);
    const empty = await memoryOf(server);
    const idle = await idleCpuRate(server);
    const before = sampleTree(server.pid);
    let opened;
    try {
      opened = await openClients(url(server), size, clientOptions);
    } catch (err) {
      return runResult({ scenario, variant, size, short: err.message });
    }
    const cpu = busyCpuSince(server, before, idle);
    await sleep(2.5 * GC_INTERVAL_MS);
    const full = await memoryOf(server);
    closeClients(opened.clients);
    const perConnection = (total) => total / size;
    const figures = {
      connectsPerSec: size / opened.seconds,
      cpuUsPerHandshake: perConnection(cpu.totalUs),
      workersUsPerHandshake: perConnection(cpu.workersUs),
      heapPerConnBytes: perConnection(full.heapBytes - empty.heapBytes),
      userRssPerConnBytes: perConnection(full.rssBytes - empty.rssBytes)
    };
    return runResult({ scenario, variant, size, figures });
  });
}

/** Adds to each run its figures over the first (baseline) run's, as `over<Figure>`. */
export function overFirst(runs, figures) {
  const [base] = runs;
  if (base.status !== 'ok') return runs;
  for (const run of runs.slice(1)) {
    if (run.status !== 'ok') continue;
    for (const f of figures) run.figures[`extra${f[0].toUpperCase()}${f.slice(1)}`] = Math.round((run.figures[f] - base.figures[f]) * 100) / 100;
  }
  return runs;
}
