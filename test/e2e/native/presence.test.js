// Presence and join/leave under the embedded engine: a real gateway with two
// workers and --auth jwt, clients on both workers.
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { configFile, api, result } from '../../helpers/api.js';
import { API_KEY } from '../../helpers/client-helpers.js';
import { SECRET, joseHs256 } from '../../helpers/tokens.js';
import { SseReader } from '../../helpers/sse.js';
import { TestClient } from '../../helpers/client.js';
import { presenceDigest } from '../../../lib/protocol/presence-hash.js';
import { PRESENCE_NAMESPACES, addressesByWorker, applyDiffs, comeAndGo, diffsOf, member, named, presenceOf, twoTabsAndBob } from '../../helpers/presence.js';

const INTERVAL_MS = 200;

describe('presence and join/leave (memory engine, two workers)', function () {
  let gw;
  let on; // worker -> a source address that reaches it
  const clients = [];
  const track = (client) => (clients.push(client), client);

  before(async () => {
    const args = ['--workers', '2', '--config', configFile(PRESENCE_NAMESPACES), '--auth', 'jwt', '--jwt-secret', SECRET, '--api-key', API_KEY, '--presence-max-clients', '5', '--join-leave-interval', String(INTERVAL_MS)];
    gw = await startGateway(args);
    on = await addressesByWorker(gw.url);
    expect(Object.keys(on)).to.have.length(2);
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });
  after(() => gw?.stop());

  it('lists the clients subscribed on every worker, with user and info; counts users once however many tabs', async () => {
    const before = (await gw.metric('gateway_presence_member_changes_total', '{change="arrived"}')) ?? 0;
    const { ann1, ann2, bob, expected } = await twoTabsAndBob('room:list', [gw.url, on[1]], [gw.url, on[2]], [gw.url, on[2]]);
    clients.push(ann1, ann2, bob);
    // A join reaches the primary before a read from its own worker, not before one from the other: polled.
    await eventually(async () => Object.keys(await presenceOf(bob, 'room:list')).length === 3, { what: 'presence lists all three' });
    expect(await presenceOf(bob, 'room:list')).to.deep.equal(expected);
    expect(await presenceOf(ann1, 'room:list')).to.deep.equal(expected);
    expect(await ann1.request({ type: 'presence_stats', channel: 'room:list' })).to.include({ type: 'presence_stats', channel: 'room:list', clients: 3, users: 2 });
    expect(await result(gw, 'presence', { channel: 'room:list' })).to.deep.equal({ channel: 'room:list', clients: expected });
    expect(await result(gw, 'presence_stats', { channel: 'room:list' })).to.deep.equal({ channel: 'room:list', clients: 3, users: 2, digest: presenceDigest(Object.keys(expected)) });
    expect(await gw.metric('gateway_presence_clients')).to.equal(3);
    // The status page's figures (GET /stats on the metrics port): the channel and its sizes.
    const shown = async () => (await (await fetch(`http://127.0.0.1:${gw.metricsPort}/stats`)).json()).primary.presenceChannels;
    await eventually(async () => (await shown()).some((c) => c.channel === 'room:list'), { what: 'room:list on the status page' });
    expect((await shown()).find((c) => c.channel === 'room:list')).to.deep.equal({ channel: 'room:list', clients: 3, users: 2 });
    // Two users arrived (ann's second tab is no arrival); ann departs only when her last tab leaves.
    expect(await gw.metric('gateway_presence_member_changes_total', '{change="arrived"}')).to.equal(before + 2);
    const departed = (await gw.metric('gateway_presence_member_changes_total', '{change="departed"}')) ?? 0;
    ann1.close();
    await eventually(async () => (await result(gw, 'presence_stats', { channel: 'room:list' })).clients === 2, { what: 'ann1 gone' });
    expect(await result(gw, 'presence_stats', { channel: 'room:list' })).to.include({ users: 2 });
    expect((await gw.metric('gateway_presence_member_changes_total', '{change="departed"}')) ?? 0).to.equal(departed);
    await ann2.request({ type: 'unsubscribe', channel: 'room:list' });
    await eventually(async () => (await result(gw, 'presence_stats', { channel: 'room:list' })).users === 1, { what: 'ann gone' });
    expect(await gw.metric('gateway_presence_member_changes_total', '{change="departed"}')).to.equal(departed + 1);
  });

  it('sends who came and went as presence_diff frames, in order, the subscriber itself included; none in a presence-only namespace', async () => {
    const watcher = track(await member(gw.url, 'w', { localAddress: on[1] }));
    await watcher.subscribe('room:order');
    const mover = track(await member(gw.url, 'mover', { info: { n: 1 }, localAddress: on[2] }));
    // A diff is no message: no seq; the mover's entry is its user and info.
    expect(await comeAndGo(watcher, mover, 'room:order')).to.deep.equal([
      ['joins', { user: 'mover', info: { n: 1 } }],
      ['leaves', { user: 'mover', info: { n: 1 } }]
    ]);
    expect(diffsOf(watcher, 'room:order').every((d) => d.seq === undefined && Object.keys(d).length === 4)).to.equal(true);
    // The watcher's own join came in a diff too: a list from presence plus diffs holds itself.
    expect(named(watcher, 'room:order', 'joins', watcher.welcome.connectionId)).to.equal(true);
    // presence without joinLeave: no frames.
    const quiet = track(await member(gw.url, 'q', { localAddress: on[1] }));
    await watcher.subscribe('quiet:x');
    await quiet.subscribe('quiet:x');
    expect(await presenceOf(watcher, 'quiet:x')).to.have.all.keys(watcher.welcome.connectionId, quiet.welcome.connectionId);
    // The marker: quiet joins a joinLeave channel after; its diff comes in a
    // later flush, on the same connection, than any diff for quiet:x would.
    await watcher.subscribe('room:marker');
    await quiet.subscribe('room:marker');
    await eventually(() => named(watcher, 'room:marker', 'joins', quiet.welcome.connectionId), { what: 'the marker diff' });
    expect(diffsOf(watcher, 'quiet:x')).to.have.length(0);
  });

  it('sends SSE presence_diff events, and lists a stream in presence under its ready event’s connectionId', async () => {
    const token = await joseHs256({ sub: 'sse-user', info: { via: 'sse' }, subscribe: ['*'] });
    const stream = await SseReader.open(`${gw.url.replace('ws://', 'http://').replace('/ws', '')}/sse?channels=room:sse&token=${token}`, { localAddress: on[1] });
    await eventually(() => stream.events.find((e) => e.event === 'ready'), { what: 'ready' });
    const { connectionId } = JSON.parse(stream.events.find((e) => e.event === 'ready').data);
    const other = track(await member(gw.url, 'ws-user', { localAddress: on[2] }));
    await other.subscribe('room:sse');
    expect(await presenceOf(other, 'room:sse')).to.deep.equal({ [connectionId]: { user: 'sse-user', info: { via: 'sse' } }, [other.welcome.connectionId]: { user: 'ws-user' } });
    const diffs = () => stream.events.filter((e) => e.event === 'presence_diff').map((e) => ({ id: e.id, diff: JSON.parse(e.data) }));
    const about = (id, side) => diffs().find(({ diff }) => Object.hasOwn(diff[side], id));
    const joined = await eventually(() => about(other.welcome.connectionId, 'joins'), { what: 'SSE diff with the join' });
    expect(joined.id).to.equal(undefined); // moves no cursor
    expect(joined.diff).to.include({ type: 'presence_diff', channel: 'room:sse' });
    expect(joined.diff.joins[other.welcome.connectionId]).to.deep.equal({ user: 'ws-user' });
    other.close();
    const left = await eventually(() => about(other.welcome.connectionId, 'leaves'), { what: 'SSE diff with the leave' });
    expect(left.diff.leaves[other.welcome.connectionId]).to.deep.equal({ user: 'ws-user' });
    const again = track(await member(gw.url, 'ws-user', { localAddress: on[2] }));
    await again.subscribe('room:sse');
    await eventually(() => about(again.welcome.connectionId, 'joins'), { what: 'the second join' });
    await stream.close();
    await eventually(async () => Object.keys(await presenceOf(again, 'room:sse')).length === 1, { what: 'the stream left' });
  });

  it('refuses bad presence reads with clear errors', async () => {
    const c = track(await member(gw.url, 'bad', { subscribe: ['room:mine', 'plain:x'] }));
    // A channel not subscribed is forbidden before its namespace is asked; one subscribed outside presence is a bad request.
    expect(await c.request({ type: 'presence', channel: 'plain:x' })).to.include({ type: 'error', code: 'forbidden' });
    await c.subscribe('plain:x');
    expect(await c.request({ type: 'presence', channel: 'plain:x' })).to.include({ type: 'error', code: 'bad_request' }).and.have.property('message').that.match(/namespace plain lack presence/);
    expect(await c.request({ type: 'presence_stats', channel: 'nowhere:x' })).to.include({ type: 'error', code: 'invalid_channel' });
    expect(await c.request({ type: 'presence', channel: 'room:other' })).to.include({ type: 'error', code: 'forbidden' });
    expect(await c.request({ type: 'presence' })).to.include({ type: 'error', code: 'bad_request' });
    expect((await api(gw, 'presence', { channel: 'plain:x' })).body.error).to.include({ code: 'bad_request' });
    // Past --presence-max-clients (5): too_many; presence_stats still answers.
    const many = await Promise.all([...Array(6)].map((_, i) => member(gw.url, `m${i}`).then(track)));
    for (const m of many) await m.subscribe('room:big');
    await eventually(async () => (await result(gw, 'presence_stats', { channel: 'room:big' })).clients === 6, { what: 'six in room:big' });
    expect(await many[0].request({ type: 'presence', channel: 'room:big' })).to.include({ type: 'error', code: 'too_many' });
    expect(await api(gw, 'presence', { channel: 'room:big' })).to.deep.include({ status: 400 }).and.have.nested.property('body.error.code', 'too_many');
    // An info claim over 1 KB is refused at auth, with the reason.
    const big = track(await member(gw.url, 'ok'));
    const refused = await big.request({ type: 'auth', token: await joseHs256({ sub: 'ok', info: { pad: 'x'.repeat(2048) } }) });
    expect(refused).to.include({ type: 'error', code: 'unauthorized' }).and.have.property('message').that.match(/info must be at most 1024 bytes/);
    const wrongType = track(await TestClient.connect(gw.url));
    const typed = await wrongType.request({ type: 'auth', token: await joseHs256({ sub: 'ok', info: 'Ann' }) });
    expect(typed).to.include({ type: 'error', code: 'unauthorized' }).and.have.property('message').that.match(/info must be a JSON object/);
    // The worker is still fine.
    expect(await many[1].request({ type: 'presence_stats', channel: 'room:big' })).to.include({ clients: 6 });
  });

  it('folds a burst of joins into at most one diff per interval, and a presence read plus the diffs after it is exact', async () => {
    const watcher = track(await member(gw.url, 'watch', { localAddress: on[1] }));
    await watcher.subscribe('room:storm');
    const read = await presenceOf(watcher, 'room:storm');
    const sent = (await gw.metric('gateway_join_leave_sent_total')) ?? 0;
    const startedAt = Date.now();
    const crowd = await Promise.all([...Array(40)].map((_, i) => member(gw.url, `c${i}`, { localAddress: on[1 + (i % 2)] }).then(track)));
    await Promise.all(crowd.map((c) => c.subscribe('room:storm')));
    for (const c of crowd.slice(0, 10)) c.close();
    // Past --presence-max-clients (5) the truth is presence_stats: the count and the digest of the ids.
    const truth = () => result(gw, 'presence_stats', { channel: 'room:storm' });
    await eventually(async () => (await truth()).clients === 31, { what: '31 present' });
    await eventually(
      async () => {
        const list = Object.keys(applyDiffs(read, diffsOf(watcher, 'room:storm')));
        const { clients, digest } = await truth();
        return list.length === clients && presenceDigest(list) === digest;
      },
      { what: "the watcher's list equal to presence" }
    );
    const seconds = (Date.now() - startedAt) / 1000;
    expect(diffsOf(watcher, 'room:storm').length).to.be.at.most(Math.ceil(seconds / (INTERVAL_MS / 1000)) + 2);
    // Every diff frame written is counted, one per subscriber.
    await eventually(async () => (await gw.metric('gateway_join_leave_sent_total')) - sent >= diffsOf(watcher, 'room:storm').length, { what: 'counted' });
  });

  it("takes a killed worker's clients out of presence within 2 s, in a diff", async () => {
    const survivor = track(await member(gw.url, 's', { localAddress: on[1] }));
    await survivor.subscribe('room:kill');
    const doomed = [];
    for (let i = 0; i < 3; i++) doomed.push(track(await member(gw.url, `d${i}`, { localAddress: on[2] })));
    for (const d of doomed) await d.subscribe('room:kill');
    await eventually(async () => Object.keys(await presenceOf(survivor, 'room:kill')).length === 4, { what: 'four in room:kill' });
    const killedAt = Date.now();
    process.kill(gw.workerPid(2), 'SIGKILL');
    const ids = doomed.map((d) => d.welcome.connectionId);
    await eventually(() => ids.every((id) => named(survivor, 'room:kill', 'leaves', id)), { what: 'the leaves in a diff', timeout: 2000, interval: 20 });
    expect(Object.keys(await presenceOf(survivor, 'room:kill'))).to.deep.equal([survivor.welcome.connectionId]);
    expect(Date.now() - killedAt).to.be.below(2000);
    await eventually(async () => (await gw.metric('gateway_workers')) === 2, { what: 'worker 2 restarted', timeout: 15000 });
  });
});
