// An agent process: forked by the orchestrator, it holds one share of the
// connections (one process can hold only as many sockets as its open-files
// limit allows) and answers the orchestrator's commands over IPC. Commands
// carry an id; the answer carries the same id.
import { Pool } from './pool.js';

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
  return { ...figures, rss: { ...rss, now } };
}

function settledRss() {
  globalThis.gc?.();
  return process.memoryUsage.rss();
}
