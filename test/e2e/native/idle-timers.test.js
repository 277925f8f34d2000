// An idle gateway wakes for nothing: every periodic timer of its processes
// (lib/runtime/ticker.js) stays stopped while there is nothing to do, starts when a
// connection comes, and stops again once it is gone. Read from the real
// gateway's tick counts: the workers' gateway_timer_ticks_total and the
// primary's in GET /stats. And a gateway holding idle connections arms no
// timer but the keepalive wheel's and the event-loop sampler's: every timer
// of every process, as async_hooks sees them (test/fixtures/timer-census.js).
import { expect } from 'chai';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { startGateway } from '../../../scripts/harness/gateway.js';
import { eventually, sleep } from '../../helpers/wait.js';

const QUIET_MS = 1500; // longer than the slowest timer's period (the sampler's, 1 s, which runs the stats report)
const CENSUS = fileURLToPath(new URL('../../fixtures/timer-census.js', import.meta.url));

/** Every timer's ticks so far, by process and name. */
async function ticksOf(gw) {
  const stats = await (await fetch(`http://127.0.0.1:${gw.metricsPort}/stats`)).json();
  const workers = {};
  for (const line of (await gw.metrics()).split('\n')) {
    const m = /^gateway_timer_ticks_total\{timer="([^"]+)"\} (\S+)$/.exec(line);
    if (m) workers[m[1]] = Number(m[2]);
  }
  return { primary: stats.primary?.timerTicks ?? {}, workers };
}

describe('idle gateway: timers run only while there is work', function () {
  this.timeout(60000);
  let gw;

  before(async () => {
    // jwt: a connection that has not authenticated has a deadline, so the deadline wheel runs too.
    gw = await startGateway(['--workers', '1', '--ping-interval', '200', '--auth', 'jwt', '--jwt-secret', 'a-secret-of-at-least-32-characters!!']);
  });
  after(() => gw?.stop());

  const ticks = () => ticksOf(gw);

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
    expect(idle.workers, 'the worker has timers').to.include.keys('keepalive', 'deadlines', 'loop-delay');
    expect(idle.primary, 'the primary has timers').to.include.keys('pressure', 'handover-watchdog', 'history-sweep', 'loop-delay');

    const ws = new WebSocket(gw.url);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const moved = (a, b, process, timer) => b[process][timer] > a[process][timer];
    const busy = await eventually(
      async () => {
        const now = await ticks();
        return ['keepalive', 'deadlines', 'loop-delay'].every((t) => moved(idle, now, 'workers', t)) && moved(idle, now, 'primary', 'pressure') && now;
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

describe('a gateway holding idle connections arms no timer but the keepalive and one sampler', function () {
  this.timeout(60000);
  const CONNECTIONS = 20;
  let gw;
  const clients = [];

  before(async () => {
    gw = await startGateway(['--workers', '1', '--ping-interval', '60000'], { env: { NODE_OPTIONS: `--import=${CENSUS}` } });
  });
  after(async () => {
    for (const ws of clients) ws.terminate();
    await gw?.stop();
  });

  /** The timers process `pid` has armed now, as the census fixture lists them. */
  async function census(pid) {
    const lines = () => gw.logs.filter((l) => l.msg === 'timer census' && l.pid === pid);
    const before = lines().length;
    process.kill(pid, 'SIGUSR2');
    await eventually(() => lines().length > before, { what: `the timer census of ${pid}` });
    return lines().at(-1).timers;
  }

  it('keeps the keepalive wheel and the sampler, at its idle pace, in the worker; the sampler in the primary', async () => {
    for (let i = 0; i < CONNECTIONS; i++) {
      const ws = new WebSocket(gw.url);
      clients.push(ws);
      await new Promise((resolve, reject) => {
        ws.on('message', (data) => {
          const frame = JSON.parse(data);
          if (frame.type === 'welcome') ws.send(JSON.stringify({ type: 'subscribe', channel: `idle-${i}`, id: 1 }));
          else if (frame.type === 'ack') resolve();
        });
        ws.once('error', reject);
      });
    }
    const stats = await eventually(
      async () => {
        const now = await (await fetch(`http://127.0.0.1:${gw.metricsPort}/stats`)).json();
        return now.workers?.[0]?.connections === CONNECTIONS && now;
      },
      { what: 'the worker reporting its connections' }
    );
    const worker = stats.workers[0].pid;
    const primary = stats.primary.pid;
    // Once the connections' arrival is past, the sampler is at its idle pace (1 s).
    const workerTimers = await eventually(
      async () => {
        const timers = await census(worker);
        return timers.some((t) => t.ms === 1000) && timers;
      },
      { timeout: 20000, interval: 200, what: "the worker's sampler at its idle pace" }
    );
    const sampler = { ms: 1000, repeat: true, callback: 'bound run' };
    const [keepalive] = workerTimers.filter((t) => t.ms !== 1000);
    expect(workerTimers, JSON.stringify(workerTimers)).to.have.deep.members([sampler, { ...keepalive, repeat: true, callback: 'bound run' }]);
    expect(keepalive.ms, 'the keepalive wheel visits its slots at the pace of 20 connections').to.be.above(1000);
    // And the one that ticks is the sampler: no stats timer of its own.
    const before = await ticksOf(gw);
    await sleep(QUIET_MS);
    const after = await ticksOf(gw);
    const moved = Object.keys(after.workers).filter((name) => after.workers[name] > (before.workers[name] ?? 0));
    expect(moved, 'the worker timers that ticked').to.include('loop-delay');
    expect(moved.filter((name) => name !== 'loop-delay' && name !== 'keepalive'), 'other worker timers that ticked').to.deep.equal([]);

    // Node's own check of the operator listener's HTTP requests (headersTimeout, requestTimeout) runs every 30 s;
    // this test's /stats request arms two more for a while (its keep-alive, the Date header's cache): waited out.
    const httpCheck = { ms: 30000, repeat: true, callback: 'bound checkConnections' };
    const same = (a, b) => JSON.stringify([...a].sort((x, y) => x.ms - y.ms)) === JSON.stringify([...b].sort((x, y) => x.ms - y.ms));
    let primaryTimers;
    await eventually(
      async () => {
        primaryTimers = await census(primary);
        return same(primaryTimers, [sampler, httpCheck]);
      },
      { timeout: 20000, interval: 500, what: "the primary's timers down to its sampler" }
    ).catch(() => expect(primaryTimers).to.have.deep.members([sampler, httpCheck]));
  });
});
