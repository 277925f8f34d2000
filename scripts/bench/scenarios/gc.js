// gc: the idle gateway, one worker holding every connection, with the
// periodic manual GC on and off. Every
// collection a worker makes is read from V8's --trace-gc, so the pauses of the
// manual ones and of V8's own are both counted; event-loop delay and RSS come
// from the same hold.
import { holdIdle } from './idle.js';
import { StatsWatch } from '../measure.js';
import { watchGc } from '../gc-trace.js';
import { quantile } from '../../../lib/loadgen/quantile.js';

export async function gc(opts) {
  const results = [];
  for (const interval of [opts.gcInterval, 0]) {
    results.push(
      await holdIdle({
        scenario: 'gc',
        variant: `gateway --gc-interval ${interval}`,
        kind: 'gateway',
        // One worker holds them all: the pause of a worker with that many connections.
        flags: ['--workers', '1', '--gc-interval', String(interval)],
        workers: 1,
        size: opts.idleConnections,
        opts,
        holdS: opts.gcSeconds,
        nodeArgs: ['--trace-gc'], // the primary passes its Node flags on to the workers
        during: async (server, holdS) => {
          const watch = new StatsWatch(server);
          const gcs = watchGc(server);
          await new Promise((resolve) => setTimeout(resolve, holdS * 1000));
          const delay = await watch.stop();
          const pauses = gcs();
          return {
            manualGcs: pauses.manual.length,
            manualPauseP99Ms: quantile(pauses.manual, 0.99),
            autoGcs: pauses.automatic.length,
            autoPauseP99Ms: quantile(pauses.automatic, 0.99),
            pauseMaxMs: Math.max(0, ...pauses.manual, ...pauses.automatic),
            eventLoopP99Ms: delay.p99Ms,
            eventLoopMaxMs: delay.maxMs
          };
        }
      })
    );
  }
  return results;
}
