// The client library's presence: presence(), presenceStats(), presence_diff
// events, and members(), whose list (a presence read plus the diffs after it)
// equals the gateway's presence after a reconnect storm of 500 clients in one
// room (a worker SIGKILLed under part of them), each client having received
// at most one diff per --join-leave-interval; under both engines.
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { startRedisNodes } from '../../helpers/redis-nodes.js';
import { configFile, result } from '../../helpers/api.js';
import { API_KEY, nodeClient, whenOpen } from '../../helpers/client-helpers.js';
import { PRESENCE_NAMESPACES } from '../../helpers/presence.js';
import { presenceDigest } from '../../../lib/client/index.js';

const CLIENTS = 500;
const INTERVAL_MS = 500;
const ARGS = ['--config', configFile(PRESENCE_NAMESPACES), '--api-key', API_KEY, '--join-leave-interval', String(INTERVAL_MS)];

describe('client library: presence and the live member list', function () {
  this.timeout(180000);
  const clients = [];
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });

  describe('memory engine', function () {
    let gw;
    before(async () => {
      gw = await startGateway(['--workers', '2', ...ARGS]);
    });
    after(() => gw?.stop());

    it('reads presence and stats, and emits presence_diff', async () => {
      const a = nodeClient(gw.url);
      const b = nodeClient(gw.url, { localAddress: '127.0.0.3' });
      clients.push(a, b);
      await Promise.all([whenOpen(a), whenOpen(b)]);
      await a.subscribe('room:lib', () => {});
      const diffs = [];
      a.on('presence_diff', (diff) => diffs.push(diff));
      await b.subscribe('room:lib', () => {});
      const about = (id, side) => diffs.find((d) => Object.hasOwn(d[side], id));
      const joined = await eventually(() => about(b.welcome.connectionId, 'joins'), { what: 'a diff with the join' });
      expect(joined).to.include({ type: 'presence_diff', channel: 'room:lib' });
      expect(joined.joins[b.welcome.connectionId]).to.deep.equal({}); // --auth none: no user, no info
      expect(Object.keys(await a.presence('room:lib')).sort()).to.deep.equal([a.welcome.connectionId, b.welcome.connectionId].sort());
      const digest = presenceDigest([a.welcome.connectionId, b.welcome.connectionId]);
      expect(await b.presenceStats('room:lib')).to.deep.equal({ clients: 2, users: 0, digest }); // --auth none: no users
      const gone = b.welcome.connectionId;
      b.close();
      await eventually(() => about(gone, 'leaves'), { what: 'a diff with the leave' });
      // A channel not subscribed is forbidden; one subscribed outside a presence namespace a bad request.
      await a.presence('plain:x').then(
        () => expect.fail('presence of a channel not subscribed'),
        (err) => expect(err.code).to.equal('forbidden')
      );
      await a.subscribe('plain:x', () => {});
      await a.presence('plain:x').then(
        () => expect.fail('presence outside a presence namespace'),
        (err) => expect(err.code).to.equal('bad_request')
      );
    });

    it(`keeps every member list exact through a reconnect storm of ${CLIENTS} clients, at most one diff per interval each`, async () => {
      await storm({ urls: [gw.url], gateway: gw, kill: () => process.kill(gw.workerPid(2), 'SIGKILL'), killed: (c) => c.welcome.worker === 2 });
    });
  });

  describe('redis engine, two nodes', function () {
    let redis;
    let nodes;
    before(async () => {
      ({ redis, nodes } = await startRedisNodes(['--workers', '1', ...ARGS]));
    });
    after(async () => {
      await Promise.all(nodes?.map((node) => node.stop()) ?? []);
      await redis?.remove();
    });

    it(`keeps every member list exact through a reconnect storm of ${CLIENTS} clients, at most one diff per interval each`, async () => {
      const [a, b] = nodes;
      await storm({ urls: [a.url, b.url], gateway: a, kill: () => process.kill(b.workerPid(1), 'SIGKILL'), killed: (c, i) => i % 2 === 1 }); // the clients of node b
    });
  });

  /**
   * CLIENTS clients (spread over `urls`) keep a member list of room:storm;
   * `kill` drops those `killed` picks, which reconnect. Every list must then
   * equal the gateway's presence, each client having received at most
   * (storm seconds / interval + 2) diffs from the kill on.
   */
  async function storm({ urls, gateway, kill, killed }) {
    for (let i = 0; i < CLIENTS; i++) clients.push(nodeClient(urls[i % urls.length], { localAddress: `127.0.0.${2 + (i % 20)}` }));
    await Promise.all(clients.map((c) => whenOpen(c)));
    const lists = clients.map((c) => c.members('room:storm'));
    await Promise.all(lists.map((l) => l.ready));
    const truth = async () => Object.keys((await result(gateway, 'presence', { channel: 'room:storm' })).clients).sort().join();
    const converged = async () => {
      const expected = await truth();
      return expected.split(',').length === CLIENTS && lists.every((l) => [...l.members.keys()].sort().join() === expected);
    };
    await eventually(converged, { what: 'member lists converged before the storm', timeout: 30000, interval: 500 });
    const counts = new Map(clients.map((c) => [c, 0]));
    for (const c of clients) c.on('presence_diff', (diff) => diff.channel === 'room:storm' && counts.set(c, counts.get(c) + 1));
    const dropped = new Map(clients.filter((c, i) => killed(c, i)).map((c) => [c, c.welcome.connectionId]));
    expect(dropped.size).to.be.above(50);
    const startedAt = Date.now();
    kill();
    const reconnected = () => [...dropped].every(([c, id]) => c.welcome !== undefined && c.welcome.connectionId !== id);
    await eventually(reconnected, { what: 'the dropped clients reconnected', timeout: 60000 });
    await eventually(converged, { what: 'member lists converged after the storm', timeout: 60000, interval: 500 });
    const seconds = (Date.now() - startedAt) / 1000;
    const most = Math.max(...counts.values());
    expect(most, `diffs to one client in a ${seconds.toFixed(1)} s storm`).to.be.at.most(Math.floor(seconds / (INTERVAL_MS / 1000)) + 2);
    expect(most).to.be.above(0);
  }
});
