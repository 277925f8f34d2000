// Unit tests of the load generator's pieces that need no sockets: address
// ranges, the run plan, the histogram, the frame reader and the totals.
import { expect } from 'chai';
import { expandAddresses, isLoopback, portRangeWarning, ephemeralPortCount } from '../../lib/loadgen/addresses.js';
import { planRun, connectionsPerProcess } from '../../lib/loadgen/plan.js';
import { resolveOptions, UsageError } from '../../lib/config/cli.js';
import { options } from '../../lib/loadgen/options.js';
import { buildReport, formatSummary, progressLine } from '../../lib/loadgen/report.js';
import { Histogram } from '../../lib/loadgen/histogram.js';
import { readMessage, padding, dataJson, nowUs } from '../../lib/loadgen/frames.js';
import { readMsgpack } from '../../lib/loadgen/msgpack-frames.js';
import { msgpackTransport } from '../../lib/transport/msgpack-transport.js';
import { encode } from '@msgpack/msgpack';
import { messageFrame } from '../../lib/protocol/frames.js';
import { combine } from '../../lib/loadgen/totals.js';

describe('loadgen source addresses', () => {
  it('expands an inclusive IPv4 range across octets, in order', () => {
    expect(expandAddresses(['127.0.0.1-127.0.0.4'])).to.deep.equal(['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4']);
    const wide = expandAddresses(['127.0.0.254-127.0.1.1']);
    expect(wide).to.deep.equal(['127.0.0.254', '127.0.0.255', '127.0.1.0', '127.0.1.1']);
  });

  it('keeps single addresses and repeated or comma-separated values', () => {
    expect(expandAddresses(['127.0.0.9', '::1', '127.0.0.1-127.0.0.1'])).to.deep.equal(['127.0.0.9', '::1', '127.0.0.1']);
    expect(resolveOptions(options, { localAddress: ['127.0.0.1,127.0.0.2', '127.0.0.5-127.0.0.6'] }).localAddress).to.deep.equal([
      '127.0.0.1',
      '127.0.0.2',
      '127.0.0.5',
      '127.0.0.6'
    ]);
  });

  for (const [value, message] of [
    ['127.0.0.9-127.0.0.2', /empty/],
    ['127.0.0.1-', /not an IP address/],
    ['127.0.0.300', /not an IP address/],
    ['127.0.0.0-127.1.0.0', /more than 65536/],
    ['::1-::1', /IPv4 only/]
  ]) {
    it(`refuses ${value}`, () => {
      expect(() => expandAddresses([value])).to.throw(UsageError, message);
    });
  }

  it('knows loopback targets', () => {
    for (const host of ['127.0.0.1', '127.255.0.9', 'localhost', '[::1]', '::1']) expect(isLoopback(host), host).to.equal(true);
    for (const host of ['10.0.0.1', '128.0.0.1', 'example.com', '[::2]', '0.0.0.0']) expect(isLoopback(host), host).to.equal(false);
  });

  it('warns when one address would need more ports than the ephemeral range', () => {
    expect(portRangeWarning(60000, 16, 28232)).to.equal(undefined);
    expect(portRangeWarning(60000, 2, 28232)).to.match(/30000 connections per source address exceed the 28232 ephemeral ports.*at least 3 addresses/);
    expect(portRangeWarning(30000, 0, 28232)).to.match(/30000 connections per source address/);
  });

  it('reads the ephemeral port range', () => {
    expect(ephemeralPortCount({ sysctl: () => [32768, 60999] })).to.equal(28232);
    expect(ephemeralPortCount({ sysctl: () => undefined })).to.equal(Infinity);
  });
});

describe('loadgen run plan', () => {
  const base = (given) => resolveOptions(options, given);

  it('derives the processes from the open-files limit, with headroom', () => {
    expect(connectionsPerProcess(20000)).to.equal(17936);
    expect(planRun(base({ connections: 60000 }), 17936).processes).to.equal(4);
    expect(planRun(base({ connections: 3000 }), 17936).processes).to.equal(1);
  });

  it('stays on this machine unless --allow-remote says otherwise', () => {
    expect(() => planRun(base({ url: 'ws://10.0.0.1:8080/ws' }), 100)).to.throw(UsageError, /must point at this machine/);
    expect(() => planRun(base({ url: 'ws://example.com/ws' }), 100)).to.throw(UsageError, /must point at this machine/);
    expect(() => planRun(base({ localAddress: '127.0.0.1-127.0.0.2,10.0.0.1' }), 100)).to.throw(UsageError, /10\.0\.0\.1 is not a loopback/);
    // Only the plan is made here: nothing is sent anywhere.
    const remote = planRun(base({ url: 'ws://10.0.0.1:8080/ws', localAddress: '10.0.1.20-10.0.1.21', allowRemote: true }), 100);
    expect(remote.agents[0].addresses).to.deep.equal(['10.0.1.20', '10.0.1.21']);
  });

  it('splits connections, rate and handshakes among agents without overlap', () => {
    const { agents } = planRun(base({ connections: 10, processes: 3, rate: 300, maxHandshakes: 10 }), 100);
    expect(agents.map((a) => [a.first, a.count])).to.deep.equal([
      [0, 4],
      [4, 3],
      [7, 3]
    ]);
    expect(agents.map((a) => a.rate)).to.deep.equal([100, 100, 100]);
    expect(agents.every((a) => a.maxHandshakes === 4)).to.equal(true);
  });

  it('gives explicit source ports with --local-address unless --no-source-ports, and refuses what the ports cannot hold', () => {
    const range = { low: 40000, high: 40999 };
    const two = ['127.0.0.1', '127.0.0.2'];
    // 5 ports per address planned (40000-40004), the other 995 spares split between the agents.
    expect(planRun(base({ connections: 10, localAddress: two, processes: 2 }), 100, range).agents.map((a) => a.ports)).to.deep.equal([
      { low: 40000, spareFrom: 40005, spareSize: 497 },
      { low: 40000, spareFrom: 40502, spareSize: 497 }
    ]);
    expect(planRun(base({ connections: 10, localAddress: two, sourcePorts: false }), 100, range).agents[0].ports).to.equal(undefined);
    expect(planRun(base({ connections: 10 }), 100, range).agents[0].ports).to.equal(undefined);
    expect(planRun(base({ connections: 2000, localAddress: two, processes: 20 }), 100, range).agents[0].ports).to.deep.equal({
      low: 40000,
      spareFrom: 41000,
      spareSize: 0
    });
    expect(() => planRun(base({ connections: 2001, localAddress: two, processes: 21 }), 100, range)).to.throw(
      UsageError,
      /2 source addresses hold at most 2000 connections \(ip_local_port_range 40000-40999: 1000 ports each\); give at least 3 addresses/
    );
  });

  it('refuses too few processes for the open-files limit and flags that do not fit together', () => {
    expect(() => planRun(base({ connections: 60000, processes: 2 }), 17936)).to.throw(UsageError, /use at least 4/);
    expect(() => planRun(base({ publishRate: 10 }))).to.throw(UsageError, /needs --channels/);
    expect(() => planRun(base({ publishRate: 10, channels: 2, publishVia: 'http' }))).to.throw(UsageError, /needs --api-key/);
  });
});

describe('loadgen histogram', () => {
  it('gives percentiles within 1 % and exact min, max, mean and stdev', () => {
    const h = new Histogram();
    for (let v = 1; v <= 100000; v++) h.record(v);
    for (const q of [0.5, 0.9, 0.99]) expect(h.quantile(q)).to.be.closeTo(q * 100000, q * 1000);
    expect([h.min, h.max, h.mean]).to.deep.equal([1, 100000, 50000.5]);
    expect(h.stdev).to.be.closeTo(28867.5, 0.1);
  });

  it('is exact for small values and merges through JSON', () => {
    const a = new Histogram();
    const b = new Histogram();
    for (let v = 0; v < 100; v++) (v % 2 ? a : b).record(v);
    const merged = Histogram.from(JSON.parse(JSON.stringify(a))).merge(JSON.parse(JSON.stringify(b)));
    expect(merged.count).to.equal(100);
    expect(merged.quantile(0.5)).to.equal(49);
    expect(merged.quantile(1)).to.equal(99);
  });
});

describe('loadgen frames', () => {
  it('reads seq and send time from the gateway message frame (or an SSE event) without parsing it', () => {
    const sent = nowUs();
    const data = dataJson(sent, 3, 7, padding(128));
    expect(data.length).to.be.within(120, 136);
    const out = { seq: 0, sentUs: 0 };
    expect(readMessage(Buffer.from(messageFrame('c42', 1234, data)), out)).to.equal(true);
    expect(out).to.deep.equal({ seq: 1234, sentUs: sent });
    expect(readMessage(Buffer.from(messageFrame('c1', 5, '{"other":1}')), out)).to.equal(true);
    expect(out).to.deep.equal({ seq: 5, sentUs: -1 });
    expect(readMessage(Buffer.from(`id: 9.k3\ndata: {"channel":"c1","seq":9,"data":${data}}`), out)).to.equal(true);
    expect(out).to.deep.equal({ seq: 9, sentUs: sent });
    expect(readMessage(Buffer.from('{"type":"ack","id":1}'), out)).to.equal(false);
  });

  it('reads seq and send time from a MessagePack message in place, and decodes any other frame', () => {
    const sent = nowUs();
    const payload = (frame) => frame.subarray((frame[1] & 0x7f) === 126 ? 4 : 2); // past the WebSocket header
    const out = { seq: 0, sentUs: 0 };
    expect(readMsgpack(payload(msgpackTransport.encode('c42', 70000, 'e', dataJson(sent, 3, 7, padding(128)))), out)).to.equal(undefined);
    expect(out).to.deep.equal({ seq: 70000, sentUs: sent });
    expect(readMsgpack(payload(msgpackTransport.encode('c1', 5, 'e', '{"other":1}')), out)).to.equal(undefined);
    expect(out).to.deep.equal({ seq: 5, sentUs: -1 });
    expect(readMsgpack(payload(msgpackTransport.encodeDelta('c1', 6, Uint8Array.from([1, 2]))), out)).to.equal(undefined);
    expect(out).to.deep.equal({ seq: 6, sentUs: -1 });
    expect(readMsgpack(Buffer.from(encode({ type: 'ack', id: 1, seq: 3 })), out)).to.deep.equal({ type: 'ack', id: 1, seq: 3 });
    expect(readMsgpack(Buffer.from([0xc1]), out)).to.deep.equal({});
  });
});

describe('loadgen totals', () => {
  it('sums counts, reason tables and arrays, and spans the connect phase', () => {
    const h = new Histogram();
    h.record(5);
    const total = combine([
      { open: 2, failed: { ECONNREFUSED: 1 }, perChannel: [1, 2], firstAttemptAt: 10, lastOpenAt: 20, latencyUs: h.toJSON() },
      undefined,
      { open: 3, failed: { ECONNREFUSED: 2, 'HTTP 503': 1 }, perChannel: [3, 4], firstAttemptAt: 5, lastOpenAt: 15, latencyUs: h.toJSON() }
    ]);
    expect(total).to.deep.include({ open: 5, failed: { ECONNREFUSED: 3, 'HTTP 503': 1 }, perChannel: [4, 6], firstAttemptAt: 5, lastOpenAt: 20 });
    expect(total.latencyUs.count).to.equal(2);
  });
});

describe('loadgen report', () => {
  const resolved = resolveOptions(options, { connections: 10 });
  const report = (totals, extra = {}) =>
    buildReport({ options: resolved, processes: 1, totals, heldAtClose: 0, publishing: { published: 0, errors: {}, unacked: 0 }, expected: 0, durationS: 1, rampS: 1, ...extra });

  it('names every shortfall, and only those', () => {
    expect(report({ peakOpen: 10 }).shortfalls).to.deep.equal([]);
    expect(report({ peakOpen: 9, received: 5, outOfOrder: 1 }, { expected: 7 }).shortfalls).to.deep.equal([
      'open 9 < target 10',
      'lost 2',
      'out of order 1'
    ]);
  });

  it('explains port exhaustion when sources ran out of ports', () => {
    const text = formatSummary(report({ peakOpen: 8, failed: { EADDRNOTAVAIL: 2 } }), 'ws://127.0.0.1:8080/ws');
    expect(text).to.match(/failed 2 \(EADDRNOTAVAIL 2\)/);
    expect(text).to.match(/hint .*more --local-address addresses, or wait 60 s/);
    expect(formatSummary(report({ peakOpen: 10 }), 'ws://x')).not.to.match(/hint/);
  });

  it('gives the rate of the ramp\'s first 90 % and of its last 10 %, over agents', () => {
    // Two agents of 1000: each 900 open 1 s after the first attempt, the last 100 over 4 s more (a wall).
    const agent = (start) => ({ opened: 1000, peakOpen: 1000, firstAttemptAt: start, opened90: 900, at90: start + 1000, lastOpenAt: start + 5000 });
    const r = report(combine([agent(0), agent(0)]));
    expect(r).to.include({ first90Rate: 1800, last10Rate: 50 });
    expect(formatSummary(r, 'ws://x')).to.include('first 90 % 1800/s, last 10 % 50/s');
    expect(report({ peakOpen: 3, opened: 3 })).to.include({ first90Rate: 0, last10Rate: 0 });
  });

  it('shows each agent\'s handshakes in flight and worst event-loop delay in the progress line', () => {
    const line = progressLine({ open: 5 }, { uptimeS: 1, target: 10, connectRate: 5, agents: [{ handshaking: 12, loopDelayMs: 3.4 }, {}] });
    expect(line).to.match(/agents handshaking\/loop ms 12\/3 0\/0\n$/);
  });
});
