// The presence pieces the engines share, alone: the table's per-user
// transitions, the frames' JSON, and the folding of joins and leaves into
// one presence_diff per channel per interval.
import { expect } from 'chai';
import { PresenceTable } from '../../lib/engines/presence-table.js';
import { DiffSender, entryJson } from '../../lib/engines/join-leave.js';
import { Op } from '../../lib/core/ipc.js';
import { presenceDiffFrame } from '../../lib/protocol/frames.js';
import { clientHash, presenceDigest } from '../../lib/protocol/presence-hash.js';
import { eventually } from '../../scripts/harness/gateway.js';

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
    const frame = presenceDiffFrame('chat:1', `{"1-ab-2":${entryJson(fields)}}`, '{}');
    expect(JSON.parse(frame)).to.deep.equal({ type: 'presence_diff', channel: 'chat:1', joins: { '1-ab-2': { user: 'a"b', info: { name: 'Ann' } } }, leaves: {} });
  });

  it('folds a channel’s joins and leaves into one diff per interval: a client that came and went is in neither, unless a read was asked', async () => {
    const pushed = [];
    const route = { push: (op) => pushed.push(op) };
    const states = { a: { routes: route }, b: { routes: [route, route] }, gone: {} };
    const sender = new DiffSender(50, (channel) => states[channel]);
    const startedAt = Date.now();
    sender.join('a', 'c1', ',"user":"ann"');
    sender.join('a', 'c2', '');
    sender.leave('a', 'c2', ''); // came and went: in neither
    sender.leave('a', 'c0', ',"user":"bob"');
    sender.join('a', 'c0', ',"user":"bob"'); // went and came back: in neither
    sender.leave('a', 'old', '');
    sender.join('b', 'x', '');
    sender.join('gone', 'y', ''); // no routes by the end of the interval: nothing sent
    expect(pushed).to.have.length(0);
    await eventually(() => pushed.length === 3, { what: 'the diffs', timeout: 2000, interval: 5 });
    expect(Date.now() - startedAt).to.be.at.least(45);
    expect(pushed[0]).to.deep.equal([Op.PRESENCE_DIFF, 'a', presenceDiffFrame('a', '{"c1":{"user":"ann"}}', '{"old":{}}')]);
    expect(pushed.slice(1)).to.deep.equal([
      [Op.PRESENCE_DIFF, 'b', presenceDiffFrame('b', '{"x":{}}', '{}')],
      [Op.PRESENCE_DIFF, 'b', presenceDiffFrame('b', '{"x":{}}', '{}')]
    ]);
    // A read asked: the rest of the interval keeps each client's last change.
    pushed.length = 0;
    sender.join('a', 'early', '');
    sender.reading('a');
    sender.leave('a', 'early', ''); // a reader may have listed it: the leave is sent
    sender.join('a', 'late', '');
    sender.leave('a', 'late', '');
    sender.leave('a', 'back', '');
    sender.join('a', 'back', '');
    await eventually(() => pushed.length === 1, { what: 'the exact diff', timeout: 2000, interval: 5 });
    expect(JSON.parse(pushed[0][2])).to.deep.equal({ type: 'presence_diff', channel: 'a', joins: { back: {} }, leaves: { early: {}, late: {} } });
    // The next interval folds again.
    pushed.length = 0;
    sender.join('a', 'z', '');
    sender.leave('a', 'z', '');
    sender.join('b', 'w', '');
    await eventually(() => pushed.length === 2, { what: 'the next diffs', timeout: 2000, interval: 5 });
    expect(pushed[0][1]).to.equal('b');
    sender.stop();
  });
});
