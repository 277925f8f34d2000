// The client library's presence: presence(), presenceStats(), join/leave
// events, and members(), whose list converges on the gateway's presence after
// a reconnect storm of 500 clients (a worker SIGKILLed under half of them, at
// the default --join-leave-rate, so most join/leave frames are dropped).
import { expect } from 'chai';
import { startGateway, eventually } from '../scripts/harness/gateway.js';
import { configFile, result } from './helpers/api.js';
import { API_KEY, nodeClient, whenOpen } from './helpers/client-helpers.js';
import { PRESENCE_NAMESPACES } from './helpers/presence.js';
import { presenceDigest } from '../lib/client/index.js';

const CLIENTS = 500;

describe('client library: presence and the live member list', function () {
  this.timeout(120000);
  let gw;
  const clients = [];

  before(async () => {
    gw = await startGateway(['--workers', '2', '--config', configFile(PRESENCE_NAMESPACES), '--api-key', API_KEY]);
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });
  after(() => gw?.stop());

  it('reads presence and stats, and emits join and leave', async () => {
    const a = nodeClient(gw.url);
    const b = nodeClient(gw.url, { localAddress: '127.0.0.3' });
    clients.push(a, b);
    await Promise.all([whenOpen(a), whenOpen(b)]);
    await a.subscribe('room:lib', () => {});
    const joins = [];
    a.on('join', (frame) => joins.push(frame));
    await b.subscribe('room:lib', () => {});
    await eventually(() => joins.length === 1, { what: 'a join' });
    expect(joins[0]).to.deep.equal({ type: 'join', channel: 'room:lib', client: b.welcome.connectionId });
    expect(Object.keys(await a.presence('room:lib')).sort()).to.deep.equal([a.welcome.connectionId, b.welcome.connectionId].sort());
    const digest = presenceDigest([a.welcome.connectionId, b.welcome.connectionId]);
    expect(await b.presenceStats('room:lib')).to.deep.equal({ clients: 2, users: 0, digest }); // --auth none: no users
    const left = new Promise((resolve) => a.on('leave', resolve));
    const gone = b.welcome.connectionId;
    b.close();
    expect(await left).to.include({ type: 'leave', client: gone });
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

  it(`keeps every member list right after a reconnect storm of ${CLIENTS} clients`, async () => {
    for (let i = 0; i < CLIENTS; i++) clients.push(nodeClient(gw.url, { localAddress: `127.0.0.${2 + (i % 20)}` }));
    await Promise.all(clients.map((c) => whenOpen(c)));
    const lists = clients.map((c) => c.members('room:storm'));
    await Promise.all(lists.map((l) => l.ready));
    const converged = async () => {
      const truth = Object.keys((await result(gw, 'presence', { channel: 'room:storm' })).clients).sort().join();
      if (truth.split(',').length !== CLIENTS) return false;
      return lists.every((l) => [...l.members.keys()].sort().join() === truth);
    };
    await eventually(converged, { what: 'member lists converged before the storm', timeout: 30000, interval: 500 });
    const onTwo = new Map(clients.filter((c) => c.welcome.worker === 2).map((c) => [c, c.welcome.connectionId]));
    expect(onTwo.size).to.be.above(50);
    process.kill(gw.workerPid(2), 'SIGKILL');
    const reconnected = () => [...onTwo].every(([c, id]) => c.welcome !== undefined && c.welcome.connectionId !== id);
    await eventually(reconnected, { what: 'worker 2’s clients reconnected', timeout: 30000 });
    await eventually(converged, { what: 'member lists converged after the storm', timeout: 30000, interval: 500 });
    expect(await gw.metric('gateway_join_leave_dropped_total')).to.be.above(0); // the lists converged although frames were dropped
  });
});
