// keepalive: one worker holding every connection while pings sweep at a short
// interval. The gateway spreads a round of pings over the interval (a timer
// wheel); ws's README sweep, in the plain ws baseline, pings everyone at once.
// Worst and p99 event-loop delay of the worker over the hold, CPU per ping
// and per second. The hold is a whole number of ping intervals, so both
// servers ping every connection the same number of times in it.
import { holdIdle } from './idle.js';
import { StatsWatch } from '../measure.js';
import { watchGc } from '../gc-trace.js';
import { sampleTree, cpuBetween } from '../proc-sampler.js';

export async function keepalive(opts, kinds) {
  const results = [];
  for (const kind of kinds) {
    const interval = String(opts.pingInterval);
    const holdS = (Math.ceil((opts.keepaliveSeconds * 1000) / opts.pingInterval) * opts.pingInterval) / 1000;
    const flags = kind === 'ws' ? ['--ping-interval', interval] : ['--workers', '1', '--ping-interval', interval, '--gc-interval', '0'];
    results.push(
      await holdIdle({
        scenario: 'keepalive',
        variant: kind,
        kind,
        flags,
        workers: 1,
        size: opts.keepaliveConnections,
        opts,
        holdS,
        nodeArgs: ['--trace-gc'], // to tell a GC pause from a keepalive stall
        during: async (server, holdS) => {
          const watch = new StatsWatch(server);
          const gcs = watchGc(server);
          const pingsBefore = await pingsSent(server);
          const before = sampleTree(server.pid);
          await new Promise((resolve) => setTimeout(resolve, holdS * 1000));
          const cpu = cpuBetween(before, sampleTree(server.pid), server.pid);
          const pings = (await pingsSent(server)) - pingsBefore;
          const keepaliveUs = kind === 'ws' ? cpu.primaryUs : cpu.workersUs;
          const delay = await watch.stop();
          const pauses = gcs();
          return {
            pingsPerSec: pings / cpu.seconds,
            // Everything a worker does while idle, pongs included, is keepalive's cost.
            workerCpuUsPerPing: pings > 0 ? keepaliveUs / pings : 0,
            workerCpuMsPerS: keepaliveUs / 1000 / cpu.seconds,
            eventLoopP99Ms: delay.p99Ms,
            eventLoopMaxMs: delay.maxMs,
            pauseMaxMs: Math.max(0, ...pauses.manual, ...pauses.automatic)
          };
        }
      })
    );
  }
  return results;
}

/** Pings sent so far: the gateway counts them in /metrics, the plain ws baseline in /stats. */
async function pingsSent(server) {
  if (server.kind === 'gateway') return server.metric('gateway_pings_sent_total');
  const { workers } = await server.stats();
  return workers[0].pings;
}
