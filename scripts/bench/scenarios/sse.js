// sse: Server-Sent Events against WebSocket on the same gateway, side by side.
// Memory per idle connection (held with a subscription each, as in idle), then
// server CPU per delivery with every connection subscribed to one channel (as
// in fan-out; the publisher is a WebSocket in both). SSE's figures carry
// their difference over WebSocket's (extra…).
import { holdIdle } from './idle.js';
import { fanout } from './fanout.js';
import { overFirst } from '../held-cost.js';

const LABEL = { ws: 'WebSocket', sse: 'SSE' };

export async function sse(opts) {
  const idle = [];
  const delivery = [];
  for (const transport of ['ws', 'sse']) {
    const variant = `gateway, ${LABEL[transport]}`;
    idle.push(
      await holdIdle({
        scenario: `sse: idle ${opts.idleConnections}`,
        variant,
        kind: 'gateway',
        flags: ['--workers', String(opts.workers)],
        workers: opts.workers,
        size: opts.idleConnections,
        opts,
        transport
      })
    );
    const [run] = await fanout(opts, ['gateway'], { transport, scenario: 'sse: fan-out' });
    delivery.push({ ...run, variant });
  }
  return [
    ...overFirst(idle, ['userRssPerConnBytes', 'heapPerConnBytes', 'kernelPerSocketBytes']),
    ...overFirst(delivery, ['cpuUsPerDelivery'])
  ];
}
