// The keepalive wheel's pace, alone, on real timers: stand-in connections
// whose transport records each ping (and answers it, unless told not to),
// so what is under test is which connection is pinged when, not a socket.
// lifecycle.test.js covers the same wheel on a gateway's real connections.
import { expect } from 'chai';
import { Keepalive } from '../../lib/session/keepalive.js';
import { ticks } from '../../lib/runtime/ticker.js';
import { kSession, kTransport } from '../../lib/core/symbols.js';
import { eventually } from '../helpers/wait.js';

/** A transport that records every ping, the turn of the loop it was written in, and answers it like a live peer unless `mute`. */
function recordingTransport({ writeUs = 0 } = {}) {
  const transport = {
    answersPings: true,
    ping: Buffer.from([0x89, 0]),
    pings: [], // {conn, at, turn}
    terminated: [],
    turn: 0,
    write(conn) {
      transport.pings.push({ conn, at: performance.now(), turn: transport.turn });
      for (const until = performance.now() + writeUs / 1000; performance.now() < until; );
      if (!conn.mute) queueMicrotask(() => Keepalive.alive(conn));
      return true;
    },
    terminate(conn) {
      transport.terminated.push(conn);
    }
  };
  // Counts the turns of the event loop, to see a visit spread over several.
  let counting = true;
  const count = () => {
    transport.turn++;
    if (counting) setImmediate(count);
  };
  count();
  transport.stop = () => (counting = false);
  return transport;
}

function connections(n, transport) {
  return Array.from({ length: n }, () => ({ [kSession]: { alive: false, keepaliveSlot: -1 }, [kTransport]: transport, mute: false }));
}

describe('keepalive wheel', function () {
  this.timeout(20000);
  let wheel;
  let transport;
  afterEach(() => {
    wheel?.stop();
    transport?.stop();
  });

  it('pings each connection once a round, a few hundred a visit, with far fewer ticks than slots', async () => {
    const interval = 1000; // 20 slots of 50 ms
    transport = recordingTransport();
    wheel = new Keepalive({ interval, maxBuffered: 1 << 20 });
    const conns = connections(1000, transport);
    const ticksBefore = ticks.get('keepalive');
    const started = performance.now();
    for (const conn of conns) wheel.add(conn);
    await eventually(() => transport.pings.length >= 2 * conns.length, { timeout: 10000, what: 'two rounds of pings' });
    const elapsed = performance.now() - started;
    const rounds = new Map(); // conn -> times pinged
    for (const { conn, at } of transport.pings) rounds.set(conn, [...(rounds.get(conn) ?? []), at]);
    expect(rounds.size, 'every connection pinged').to.equal(conns.length);
    for (const times of rounds.values()) {
      for (let i = 1; i < times.length; i++) expect(times[i] - times[i - 1], 'pings of one connection apart').to.be.at.least(0.7 * interval);
    }
    // One visit a slot would be a tick every 50 ms; 50 connections a slot
    // make five slots a visit (BATCH 250), a tick every 250 ms.
    const tickCount = ticks.get('keepalive') - ticksBefore;
    expect(tickCount, `ticks in ${Math.round(elapsed)} ms`).to.be.at.most(Math.ceil(elapsed / 250) + 1);
    expect(transport.terminated).to.be.empty;
  });

  it('puts connections that join one after another in one slot, 32 at a time, the runs going round the slots', () => {
    // Those connections were allocated together: a visit then walks memory in order.
    transport = recordingTransport();
    wheel = new Keepalive({ interval: 1000, maxBuffered: 1 << 20 }); // 20 slots
    const conns = connections(32 * 21, transport);
    for (const conn of conns) wheel.add(conn);
    for (let run = 0; run < 21; run++) {
      const slots = new Set(conns.slice(run * 32, (run + 1) * 32).map((conn) => conn[kSession].keepaliveSlot));
      expect([...slots], `run ${run}`).to.deep.equal([run % 20]);
    }
  });

  it('terminates a connection that did not answer its previous ping, and keeps the others', async () => {
    transport = recordingTransport();
    wheel = new Keepalive({ interval: 400, maxBuffered: 1 << 20 });
    const [mute, live] = connections(2, transport);
    mute.mute = true;
    wheel.add(mute);
    wheel.add(live);
    await eventually(() => transport.terminated.length === 1, { timeout: 5000, what: 'the mute connection terminated' });
    expect(transport.terminated).to.deep.equal([mute]);
    expect(wheel.size).to.equal(1);
    const livePings = transport.pings.filter((p) => p.conn === live).length;
    await eventually(() => transport.pings.filter((p) => p.conn === live).length > livePings + 1, { timeout: 5000, what: 'the live one pinged on' });
    expect(transport.terminated).to.have.length(1);
  });

  it('goes on in later turns of the loop when a visit takes longer than its budget', async () => {
    transport = recordingTransport({ writeUs: 100 }); // a visit of 250: 25 ms of writes
    wheel = new Keepalive({ interval: 1000, maxBuffered: 1 << 20 });
    const conns = connections(1000, transport);
    for (const conn of conns) wheel.add(conn);
    await eventually(() => transport.pings.length >= 250, { timeout: 10000, what: 'a visit of 250 pings' });
    const turns = new Set(transport.pings.slice(0, 250).map((p) => p.turn));
    expect(turns.size, 'turns of the loop the first visit took').to.be.above(1);
  });

  it('stops its timer once the last connection left, and starts it with the next', async () => {
    transport = recordingTransport();
    wheel = new Keepalive({ interval: 200, maxBuffered: 1 << 20 });
    const [conn] = connections(1, transport);
    wheel.add(conn);
    expect(wheel.ticker.running).to.equal(true);
    wheel.remove(conn);
    await eventually(() => !wheel.ticker.running, { timeout: 5000, what: 'the timer stopped' });
    const pinged = transport.pings.length;
    wheel.add(conn);
    expect(wheel.ticker.running).to.equal(true);
    await eventually(() => transport.pings.length > pinged, { timeout: 5000, what: 'a ping after the restart' });
  });
});
