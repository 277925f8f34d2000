import { expect } from 'chai';
import { Balancer } from '../../lib/primary/balancer.js';
import { parseProxyHeader } from '../../lib/transport/proxy-protocol.js';
import { proxyV1, proxyV2 } from '../helpers/proxy.js';

const slots = (numbers) => numbers.map((number) => ({ number, sockets: 0, received: 0, handed: 0 }));
const ips = Array.from({ length: 2000 }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.${(i * 7) & 255}`);

describe('balancer', () => {
  it('ip: a dead worker\'s IPs move, every other IP stays', () => {
    const balancer = new Balancer('ip');
    const all = slots([1, 2, 3, 4]);
    const before = ips.map((ip) => balancer.pick(ip, all).number);
    const without3 = all.filter((s) => s.number !== 3);
    const during = ips.map((ip) => balancer.pick(ip, without3).number);
    let moved = 0;
    ips.forEach((ip, i) => {
      if (before[i] === 3) moved++;
      else expect(during[i]).to.equal(before[i]);
    });
    expect(during).to.not.include(3);
    expect(moved / ips.length).to.be.within(0.2, 0.3); // about a quarter
    expect(ips.map((ip) => balancer.pick(ip, all).number)).to.deep.equal(before);
  });

  it('ip: spreads addresses evenly', () => {
    const balancer = new Balancer('ip');
    const counts = [0, 0, 0, 0];
    for (const ip of ips) counts[balancer.pick(ip, slots([1, 2, 3, 4])).number - 1]++;
    for (const n of counts) expect(n).to.be.within(400, 600);
  });

  it('even: least loaded first, counting what was handed but not yet received', () => {
    const balancer = new Balancer('even');
    const all = slots([1, 2, 3]);
    all[0].sockets = 10;
    const picks = [];
    for (let i = 0; i < 12; i++) {
      const slot = balancer.pick('127.0.0.1', all);
      slot.handed++;
      picks.push(slot.number);
    }
    // Worker 1 already holds 10: the other two share the 12 new ones.
    expect(picks.filter((n) => n === 1)).to.have.length(0);
    expect(picks.filter((n) => n === 2)).to.have.length(6);
    expect(picks.filter((n) => n === 3)).to.have.length(6);
  });

  it('returns undefined when no worker is live', () => {
    expect(new Balancer('ip').pick('1.2.3.4', [])).to.equal(undefined);
    expect(new Balancer('even').pick('1.2.3.4', [])).to.equal(undefined);
  });
});

describe('PROXY header parser', () => {
  it('reads v1 TCP4, TCP6 and UNKNOWN, with the header length', () => {
    const v1 = proxyV1('203.0.113.5');
    expect(parseProxyHeader(Buffer.concat([v1, Buffer.from('GET /')]))).to.deep.equal({ ip: '203.0.113.5', length: v1.length });
    expect(parseProxyHeader(proxyV1('2001:db8::1')).ip).to.equal('2001:db8::1');
    expect(parseProxyHeader(Buffer.from('PROXY UNKNOWN\r\n'))).to.deep.equal({ ip: undefined, length: 15 });
  });

  it('reads v2 PROXY and LOCAL commands and skips TLVs', () => {
    const tlv = Buffer.from([0xea, 0, 3, 1, 2, 3]);
    const v2 = proxyV2('192.0.2.44', { tlv });
    expect(parseProxyHeader(Buffer.concat([v2, Buffer.from('GET')]))).to.deep.equal({ ip: '192.0.2.44', length: v2.length });
    expect(parseProxyHeader(proxyV2('192.0.2.44', { command: 0 })).ip).to.equal(undefined);
  });

  it('asks for more bytes while a header is incomplete', () => {
    for (const header of [proxyV1('203.0.113.5'), proxyV2('192.0.2.1')]) {
      for (let n = 1; n < header.length; n++) expect(parseProxyHeader(header.subarray(0, n)), `${n} bytes`).to.equal(null);
    }
  });

  it('refuses what is not a header, with a reason', () => {
    const reason = (bytes) => {
      try {
        parseProxyHeader(Buffer.from(bytes));
      } catch (err) {
        return err.code;
      }
    };
    expect(reason('GET / HTTP/1.1')).to.equal('proxy_missing');
    expect(reason('PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n')).to.equal('proxy_malformed');
    expect(reason('PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n')).to.equal('proxy_malformed');
    expect(reason(`PROXY ${'x'.repeat(110)}`)).to.equal('proxy_too_long');
    const v2 = proxyV2('1.2.3.4');
    v2[12] = 0x31; // version 3
    expect(reason(v2)).to.equal('proxy_malformed');
  });
});
