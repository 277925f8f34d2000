// An agent process: forked by the orchestrator, it holds one share of the
// connections (one process can hold only as many sockets as its open-files
// limit allows) and answers the orchestrator's commands over IPC. Commands
// carry an id; the answer carries the same id.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Pool } from './pool.js';

// A stalled agent slows the ramp whatever the server does: the orchestrator
// shows each agent's worst delay.
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();

let pool;
const rss = { baseline: 0, held: 0, heldConnections: 0, peak: 0 };

const commands = {
  async start(plan) {
    rss.baseline = settledRss();
    pool = new Pool(plan);
    pool.ramp().then(() => {
      // Measured before any message flows, so it is the cost of holding connections.
      rss.held = settledRss();
      rss.heldConnections = pool.counts.open;
    });
  },
  status() {
    return withRss(pool.status());
  },
  subscribers() {
    return { subscribers: Array.from(pool.subscribers) };
  },
  publish({ rate }) {
    pool.startPublishing(rate);
  },
  stopPublishing({ timeout }) {
    return pool.stopPublishing(timeout);
  },
  async close({ timeout }) {
    await pool.closeAll(timeout);
    return withRss(pool.final());
  }
};

process.on('message', async ({ id, cmd, args }) => {
  const result = await commands[cmd](args);
  // After the final figures are out, leaving the IPC channel ends this process.
  process.send({ id, result }, () => cmd === 'close' && process.disconnect());
});
// The orchestrator is gone: nothing would ever close these sockets.
process.on('disconnect', () => process.exit());

function withRss(figures) {
  const now = process.memoryUsage.rss();
  rss.peak = Math.max(rss.peak, now);
  const loopDelayMs = Math.max(0, loopDelay.max / 1e6 - 10); // less the timer's own period
  loopDelay.reset();
  return { ...figures, loopDelayMs, rss: { ...rss, now } };
}

function settledRss() {
  globalThis.gc?.();
  return process.memoryUsage.rss();
}
