// pusher and ably: another protocol against the native one on the same
// gateway (one app configured for both runs), side by side: memory per idle
// connection (each subscribed to a channel, as in idle), server CPU per
// handshake (as in handshake), and server CPU per fan-out delivery (as in
// fan-out; the other protocol's publisher publishes through its HTTP API,
// the native one over its WebSocket). The other protocol's figures carry
// their difference over native's (extra…) and their ratio to it (ratio…):
// the aim is at most 1.1 on idle memory and fan-out, 1.2 on Ably's handshake.
import { holdIdle } from './idle.js';
import { handshake } from './handshake.js';
import { fanout } from './fanout.js';
import { overFirst } from '../held-cost.js';
import { ablyClients, NATIVE_CLIENTS, pusherClients } from '../clients.js';

export const BENCH_APP = Object.freeze({ appId: 'bench', key: 'bench-key', secret: 'bench-secret-of-24-chars' });
const APP_FLAGS = ['--pusher-app-id', BENCH_APP.appId, '--pusher-key', BENCH_APP.key, '--pusher-secret', BENCH_APP.secret];

export const pusher = (opts) => beside(opts, 'pusher', pusherClients(BENCH_APP));
export const ably = (opts) => beside(opts, 'ably', ablyClients(BENCH_APP));

/** The native clients' runs, then the other protocol's, on the same gateway flags. */
async function beside(opts, scenario, other) {
  const idle = [];
  const handshakes = [];
  const delivery = [];
  for (const clients of [NATIVE_CLIENTS, other]) {
    const variant = `gateway, ${clients.label}`;
    idle.push(
      await holdIdle({
        scenario: `${scenario}: idle ${opts.idleConnections}`,
        variant,
        kind: 'gateway',
        flags: ['--workers', String(opts.workers), ...APP_FLAGS],
        workers: opts.workers,
        size: opts.idleConnections,
        opts,
        clients
      })
    );
    const [connects] = await handshake(opts, ['gateway'], { scenario: `${scenario}: handshake`, flags: APP_FLAGS, clients });
    handshakes.push({ ...connects, variant });
    const [run] = await fanout(opts, ['gateway'], { scenario: `${scenario}: fan-out`, flags: APP_FLAGS, clients });
    delivery.push({ ...run, variant });
  }
  return [
    ...ratios(overFirst(idle, ['userRssPerConnBytes', 'heapPerConnBytes']), ['userRssPerConnBytes']),
    ...ratios(overFirst(handshakes, ['cpuUsPerHandshake', 'churnCpuUsPerHandshake']), ['cpuUsPerHandshake', 'churnCpuUsPerHandshake']),
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
