// The presence pieces the engines share, alone: the table's per-user
// transitions, the frames' JSON, and the per-channel rate of join/leave.
import { expect } from 'chai';
import { PresenceTable } from '../lib/engines/presence-table.js';
import { JoinLeaveSender, entryJson, joinLeaveFrame, kindOf } from '../lib/engines/join-leave.js';
import { Op } from '../lib/ipc.js';
import { clientHash, presenceDigest } from '../lib/protocol.js';

describe('presence units', function () {
  it('tells a user’s first client and last one apart, per channel; a client added twice counts once', () => {
    const table = new PresenceTable();
    const [r1, r2] = [{}, {}];
    expect(table.add('c', 'a1', r1, 'ann', '')).to.equal(2);
    expect(table.add('c', 'a2', r2, 'ann', '')).to.equal(1);
    expect(table.add('c', 'a2', r2, 'ann', '')).to.equal(0);
    expect(table.add('c', 'x', r2, null, '')).to.equal(1); // anonymous: no user to count
    expect(table.add('d', 'a1', r1, 'ann', '')).to.equal(2); // another channel, another arrival
    expect(table.size).to.equal(4);
    expect(table.room('c').users.size).to.equal(1);
    expect(table.ofRoute(r2)).to.deep.equal([['c', 'a2'], ['c', 'x']]);
    expect(table.remove('c', 'a1').departed).to.equal(false);
    expect(table.remove('c', 'a2').departed).to.equal(true);
    expect(table.remove('c', 'a2')).to.equal(undefined);
    expect(table.largest(5)).to.deep.equal([
      { channel: 'c', clients: 1, users: 0 },
      { channel: 'd', clients: 1, users: 1 }
    ]);
    for (let i = 0; i < 5; i++) table.add('e', `e${i}`, r1, null, '');
    for (let i = 0; i < 3; i++) table.add('f', `f${i}`, r1, null, '');
    expect(table.largest(2).map((c) => [c.channel, c.clients])).to.deep.equal([
      ['e', 5],
      ['f', 3]
    ]);
    table.remove('c', 'x');
    expect(table.room('c')).to.equal(undefined); // an empty channel is forgotten
  });

  it('hashes client ids with 32-bit FNV-1a; a digest is their XOR, whatever the order, and the table keeps it', () => {
    expect(clientHash('')).to.equal(0x811c9dc5);
    expect(clientHash('a')).to.equal(0xe40c292c);
    expect(clientHash('foobar')).to.equal(0xbf9cf968);
    expect(presenceDigest(['x', 'y', 'z'])).to.equal(presenceDigest(['z', 'x', 'y']));
    expect(presenceDigest([])).to.equal(0);
    const table = new PresenceTable();
    for (const id of ['1-ab-0', '1-ab-1', '2-cd-0']) table.add('c', id, {}, null, '');
    table.remove('c', '1-ab-1');
    expect(table.room('c').digest).to.equal(presenceDigest(['2-cd-0', '1-ab-0']));
  });

  it('builds entries and frames as JSON from the worker’s fields', () => {
    const fields = `,"user":${JSON.stringify('a"b')},"info":{"name":"Ann"}`;
    expect(JSON.parse(entryJson(fields))).to.deep.equal({ user: 'a"b', info: { name: 'Ann' } });
    expect(JSON.parse(entryJson(''))).to.deep.equal({});
    const frame = joinLeaveFrame('leave', 'chat:1', '1-ab-2', fields);
    expect(JSON.parse(frame)).to.deep.equal({ type: 'leave', channel: 'chat:1', client: '1-ab-2', user: 'a"b', info: { name: 'Ann' } });
    expect(kindOf(frame)).to.equal('leave');
    expect(kindOf(joinLeaveFrame('join', 'c', 'x', ''))).to.equal('join');
  });

  it('sends at most the rate per channel per second and counts the rest', async () => {
    // Starts early in a second, so the burst below stays within one window.
    while (Date.now() % 1000 > 500) await new Promise((resolve) => setImmediate(resolve));
    const pushed = [];
    const states = { a: { routes: { push: (op) => pushed.push(op) } }, b: { routes: { push: (op) => pushed.push(op) } } };
    const sender = new JoinLeaveSender(3, (channel) => states[channel]);
    let dropped = 0;
    sender.instruments = { joinLeaveDropped: (n) => (dropped += n) };
    for (let i = 0; i < 5; i++) sender.send('a', `c${i}`, joinLeaveFrame('join', 'a', `c${i}`, ''));
    sender.send('b', 'z', joinLeaveFrame('join', 'b', 'z', ''));
    sender.send('nobody', 'y', '{}'); // no routes: nothing to send, nothing dropped
    expect(pushed.map((op) => [op[0], op[1], op[2]])).to.deep.equal([
      [Op.JOIN_LEAVE, 'a', 'c0'],
      [Op.JOIN_LEAVE, 'a', 'c1'],
      [Op.JOIN_LEAVE, 'a', 'c2'],
      [Op.JOIN_LEAVE, 'b', 'z']
    ]);
    expect(dropped).to.equal(2);
  });
});
