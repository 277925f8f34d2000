// An idle gateway wakes for nothing: every periodic timer of its processes
// (lib/ticker.js) stays stopped while there is nothing to do, starts when a
// connection comes, and stops again once it is gone. Read from the real
// gateway's tick counts: the workers' gateway_timer_ticks_total and the
// primary's in GET /stats.
import { expect } from 'chai';
import WebSocket from 'ws';
import { startGateway } from '../scripts/harness/gateway.js';
import { eventually, sleep } from './helpers/wait.js';

const QUIET_MS = 1500; // longer than the slowest timer's period (stats, 1 s)

describe('idle gateway: timers run only while there is work', function () {
  this.timeout(60000);
  let gw;

  before(async () => {
    // jwt: a connection that has not authenticated has a deadline, so the deadline wheel runs too.
    gw = await startGateway(['--workers', '1', '--ping-interval', '200', '--auth', 'jwt', '--jwt-secret', 'a-secret-of-at-least-32-characters!!']);
  });
  after(() => gw?.stop());

  /** Every timer's ticks so far, by process and name. */
  async function ticks() {
    const stats = await (await fetch(`http://127.0.0.1:${gw.metricsPort}/stats`)).json();
    const workers = {};
    for (const line of (await gw.metrics()).split('\n')) {
      const m = /^gateway_timer_ticks_total\{timer="([^"]+)"\} (\S+)$/.exec(line);
      if (m) workers[m[1]] = Number(m[2]);
    }
    return { primary: stats.primary?.timerTicks ?? {}, workers };
  }

  /** Resolves with the ticks once none moved over QUIET_MS (the time itself is under test). */
  async function quiet(what) {
    return eventually(
      async () => {
        const before = await ticks();
        await sleep(QUIET_MS);
        const after = await ticks();
        return JSON.stringify(after) === JSON.stringify(before) && after;
      },
      { timeout: 20000, interval: 0, what }
    );
  }

  it('ticks no timer with no connection, ticks them with one, and stops them once it closed', async () => {
    // The worker's first report comes a second after it starts; the gateway is idle after that.
    await eventually(async () => (await fetch(`http://127.0.0.1:${gw.metricsPort}/stats`)).status === 200, { what: 'the first /stats' });
    const idle = await quiet('an idle gateway whose timers tick no more');
    expect(idle.workers, 'the worker has timers').to.include.keys('keepalive', 'deadlines', 'stats');
    expect(idle.primary, 'the primary has timers').to.include.keys('pressure', 'handover-watchdog', 'history-sweep');

    const ws = new WebSocket(gw.url);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const moved = (a, b, process, timer) => b[process][timer] > a[process][timer];
    const busy = await eventually(
      async () => {
        const now = await ticks();
        return ['keepalive', 'deadlines', 'stats'].every((t) => moved(idle, now, 'workers', t)) && moved(idle, now, 'primary', 'pressure') && now;
      },
      { what: 'the worker and primary timers ticking while a connection is held' }
    );
    expect(busy.workers.keepalive - idle.workers.keepalive).to.be.above(0);

    ws.close();
    await new Promise((resolve) => ws.once('close', resolve));
    const after = await quiet('the timers stopped again after the close');
    expect(after.workers.keepalive, 'no keepalive tick while nothing is held').to.be.at.least(busy.workers.keepalive);
  });
});
