// The presence pieces the engines share, alone: the table's per-user
// transitions, the members' values and their encodings, and the folding of joins and leaves into
// one presence_diff per channel per interval.
import { expect } from 'chai';
import { PresenceTable } from '../../lib/engines/presence-table.js';
import { DiffSender } from '../../lib/engines/join-leave.js';
import { memberOf } from '../../lib/core/identity.js';
import { memberOfStored, storedMember } from '../../lib/engines/redis/stored-member.js';
import { Op } from '../../lib/core/ipc.js';
import { presenceDiffFrame, presenceFrame } from '../../lib/protocol/frames.js';
import { clientHash, presenceDigest } from '../../lib/protocol/presence-hash.js';
import { eventually } from '../../scripts/harness/gateway.js';

const ANN = memberOf('ann');

describe('presence units', function () {
  it('tells a user’s first client and last one apart, per channel; a client added twice counts once', () => {
    const table = new PresenceTable();
    const [r1, r2] = [{}, {}];
    expect(table.add('c', 'a1', r1, ANN)).to.equal(2);
    expect(table.add('c', 'a2', r2, ANN)).to.equal(1);
    expect(table.add('c', 'a2', r2, ANN)).to.equal(0);
    expect(table.add('c', 'x', r2, memberOf(null))).to.equal(1); // anonymous: no user to count
    expect(table.add('d', 'a1', r1, ANN)).to.equal(2); // another channel, another arrival
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
    for (let i = 0; i < 5; i++) table.add('e', `e${i}`, r1, memberOf(null));
    for (let i = 0; i < 3; i++) table.add('f', `f${i}`, r1, memberOf(null));
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
    for (const id of ['1-ab-0', '1-ab-1', '2-cd-0']) table.add('c', id, {}, memberOf(null));
    table.remove('c', '1-ab-1');
    expect(table.room('c').digest).to.equal(presenceDigest(['2-cd-0', '1-ab-0']));
  });

  it('makes members as values, leaving out what is not there, and encodes them the same in every form', () => {
    const odd = { name: 'Ann "A" \\ \u2028\n', emoji: '😀', nested: [null, 1.5, { deep: true }] };
    expect(memberOf('a"b', odd)).to.deep.equal({ user: 'a"b', info: odd });
    expect(memberOf('u', undefined)).to.deep.equal({ user: 'u' });
    expect(memberOf(null, undefined)).to.deep.equal({});
    expect(memberOf(null, 7)).to.deep.equal({ info: 7 });
    for (const member of [memberOf('a"b', odd), memberOf('u'), memberOf(null, undefined), memberOf(null, 'x')]) {
      // The Redis engine's stored text gives the same value back.
      expect(memberOfStored(storedMember(member))).to.deep.equal(member);
      const frame = JSON.parse(presenceDiffFrame('chat:1', JSON.stringify({ '1-ab-2': member }), '{}'));
      expect(frame).to.deep.equal({ type: 'presence_diff', channel: 'chat:1', joins: { '1-ab-2': member }, leaves: {} });
      expect(JSON.parse(presenceFrame(3, 'chat:1', { c: member })).clients.c).to.deep.equal(member);
    }
    expect(storedMember(memberOf(null, undefined))).to.equal('');
    expect(storedMember(memberOf('u', 1))).to.equal(',"user":"u","info":1');
  });

  it('folds a channel’s joins and leaves into one diff per interval: a client that came and went is in neither, unless a read was asked', async () => {
    const pushed = [];
    const route = { push: (op) => pushed.push(op) };
    const states = { a: { routes: route }, b: { routes: [route, route] }, gone: {} };
    const sender = new DiffSender(50, (channel) => states[channel]);
    const startedAt = Date.now();
    const [bob, none] = [memberOf('bob'), memberOf(null)];
    sender.join('a', 'c1', ANN);
    sender.join('a', 'c2', none);
    sender.leave('a', 'c2', none); // came and went: in neither
    sender.leave('a', 'c0', bob);
    sender.join('a', 'c0', bob); // went and came back: in neither
    sender.leave('a', 'old', none);
    sender.join('b', 'x', none);
    sender.join('gone', 'y', none); // no routes by the end of the interval: nothing sent
    expect(pushed).to.have.length(0);
    await eventually(() => pushed.length === 3, { what: 'the diffs', timeout: 2000, interval: 5 });
    expect(Date.now() - startedAt).to.be.at.least(45);
    expect(pushed[0]).to.deep.equal([Op.PRESENCE_DIFF, 'a', '{"c1":{"user":"ann"}}', '{"old":{}}']);
    expect(pushed.slice(1)).to.deep.equal([
      [Op.PRESENCE_DIFF, 'b', '{"x":{}}', '{}'],
      [Op.PRESENCE_DIFF, 'b', '{"x":{}}', '{}']
    ]);
    // A read asked: the rest of the interval keeps each client's last change.
    pushed.length = 0;
    sender.join('a', 'early', none);
    sender.reading('a');
    sender.leave('a', 'early', none); // a reader may have listed it: the leave is sent
    sender.join('a', 'late', none);
    sender.leave('a', 'late', none);
    sender.leave('a', 'back', none);
    sender.join('a', 'back', none);
    await eventually(() => pushed.length === 1, { what: 'the exact diff', timeout: 2000, interval: 5 });
    expect(pushed[0].slice(2).map((side) => JSON.parse(side))).to.deep.equal([{ back: {} }, { early: {}, late: {} }]);
    // The next interval folds again.
    pushed.length = 0;
    sender.join('a', 'z', none);
    sender.leave('a', 'z', none);
    sender.join('b', 'w', none);
    await eventually(() => pushed.length === 2, { what: 'the next diffs', timeout: 2000, interval: 5 });
    expect(pushed[0][1]).to.equal('b');
    sender.stop();
  });
});
