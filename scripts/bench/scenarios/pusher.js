// pusher: Pusher's protocol against the native one on the same gateway (one
// Pusher app configured for both runs), side by side: memory per idle
// connection (each subscribed to a channel, as in idle), server CPU per
// handshake (as in handshake), and server CPU per fan-out delivery (as in
// fan-out; Pusher's publisher publishes through the app's HTTP API, the
// native one over its WebSocket). Pusher's figures carry their difference
// over native's (extra…) and their ratio to it (ratio…): the aim is at most
// 1.1 on each.
import { holdIdle } from './idle.js';
import { handshake } from './handshake.js';
import { fanout } from './fanout.js';
import { overFirst } from '../held-cost.js';

export const BENCH_APP = Object.freeze({ appId: 'bench', key: 'bench-key', secret: 'bench-secret-of-24-chars' });
const APP_FLAGS = ['--pusher-app-id', BENCH_APP.appId, '--pusher-key', BENCH_APP.key, '--pusher-secret', BENCH_APP.secret];
const VARIANTS = [
  ['native', undefined],
  ['Pusher', BENCH_APP]
];

export async function pusher(opts) {
  const idle = [];
  const handshakes = [];
  const delivery = [];
  for (const [label, pusherApp] of VARIANTS) {
    const variant = `gateway, ${label}`;
    idle.push(
      await holdIdle({
        scenario: `pusher: idle ${opts.idleConnections}`,
        variant,
        kind: 'gateway',
        flags: ['--workers', String(opts.workers), ...APP_FLAGS],
        workers: opts.workers,
        size: opts.idleConnections,
        opts,
        pusherApp
      })
    );
    const [connects] = await handshake(opts, ['gateway'], { scenario: 'pusher: handshake', flags: APP_FLAGS, pusherApp });
    handshakes.push({ ...connects, variant });
    const [run] = await fanout(opts, ['gateway'], { scenario: 'pusher: fan-out', flags: APP_FLAGS, pusherApp });
    delivery.push({ ...run, variant });
  }
  return [
    ...ratios(overFirst(idle, ['userRssPerConnBytes', 'heapPerConnBytes']), ['userRssPerConnBytes']),
    ...ratios(overFirst(handshakes, ['cpuUsPerHandshake']), ['cpuUsPerHandshake']),
    ...ratios(overFirst(delivery, ['cpuUsPerDelivery']), ['cpuUsPerDelivery'])
  ];
}

/** Each later run's figures over the first's, as ratio<Figure>. */
function ratios(runs, figures) {
  const [base] = runs;
  if (base.status !== 'ok') return runs;
  for (const run of runs.slice(1)) {
    if (run.status !== 'ok') continue;
    for (const f of figures) run.figures[`ratio${f[0].toUpperCase()}${f.slice(1)}`] = Math.round((run.figures[f] / base.figures[f]) * 100) / 100;
  }
  return runs;
}
