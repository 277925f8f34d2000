// Ably's protocol on two gateway nodes sharing one Redis, with the real
// ably-js: messages across nodes with their serials, presence entered,
// updated and left on one node seen on the other, the members a client
// attaching on either node is told (SYNC) and a REST read lists, a node's
// member gone when its client closes, and a connection dropped on one node
// resumed on the other (the same connectionId, its channel recovered, its
// member kept, past the grace its old node gives a dropped socket's members).
import { expect } from 'chai';
import Ably from 'ably';
import { startRedisNodes } from '../../helpers/redis-nodes.js';
import { configFile } from '../../helpers/api.js';
import { APP, eventually } from '../../helpers/pusher.js';

const KEY = `${APP.appId}.${APP.key}:${APP.secret}`;
const GRACE_MS = 15000; // a dropped connection's members stay this long (lib/ably/presence.js)

describe('Ably on two Redis nodes', function () {
  this.timeout(60000);
  let cluster;
  const clients = [];
  const options = (node, more) => ({ endpoint: '127.0.0.1', port: node.port, tls: false, disableConnectivityCheck: true, logLevel: 0, ...more });
  const realtime = (node, more) => {
    const client = new Ably.Realtime(options(node, { key: KEY, ...more }));
    clients.push(client);
    return client;
  };

  before(async () => {
    cluster = await startRedisNodes(['--config', configFile({ pusherApps: [APP] })]);
  });
  after(async () => {
    for (const client of clients.splice(0)) client.close();
    await Promise.all(cluster?.nodes.map((node) => node.stop()) ?? []);
    await cluster?.redis.stop();
  });

  it('carries messages and presence across nodes: events in order, SYNC and REST exact on both', async () => {
    const [one, two] = cluster.nodes;
    const alice = realtime(one, { clientId: 'alice' });
    const bob = realtime(two, { clientId: 'bob' });
    await Promise.all([alice.connection.once('connected'), bob.connection.once('connected')]);
    const [onAlice, onBob] = [alice.channels.get('hall'), bob.channels.get('hall')];
    const seen = [];
    const got = [];
    await onBob.presence.subscribe((m) => seen.push([m.action, m.clientId, m.data]));
    await onBob.subscribe((m) => got.push(m.data));
    await onAlice.presence.enter('in');
    const { serials } = await onAlice.publish('m', 'across');
    await onAlice.presence.update('still in');
    await eventually(() => seen.length === 2 && got.length === 1, { what: 'the enter, the message and the update on node 2', timeout: 10000 });
    expect(got).to.deep.equal(['across']);
    expect(serials[0]).to.match(/:\d+$/);
    await onBob.presence.enter('me too');
    // A client attaching later on either node is told both members (the SYNC is the channel's members as of its
    // place in the channel, bob's ENTER may follow it); REST on either lists them.
    const both = JSON.stringify([['alice', 'still in'], ['bob', 'me too']]);
    for (const node of [one, two]) {
      const late = realtime(node).channels.get('hall');
      const members = async () => JSON.stringify((await late.presence.get()).map((m) => [m.clientId, m.data]).sort());
      await eventually(async () => (await members()) === both, { what: `both members at a client attached on ${node === one ? 'node 1' : 'node 2'}`, timeout: 10000 });
      const rest = new Ably.Rest(options(node, { key: KEY }));
      expect((await rest.channels.get('hall').presence.get()).items.map((m) => m.clientId).sort()).to.deep.equal(['alice', 'bob']);
    }
    alice.close();
    await eventually(() => seen.length === 4, { what: "alice's leave on node 2", timeout: 10000 });
    expect(seen).to.deep.equal([
      ['enter', 'alice', 'in'],
      ['update', 'alice', 'still in'],
      ['enter', 'bob', 'me too'],
      ['leave', 'alice', undefined]
    ]);
    expect((await onBob.presence.get()).map((m) => m.clientId)).to.deep.equal(['bob']);
  });

  it('resumes on the other node a connection dropped on one: the same id, its member kept past the grace, nothing missed', async () => {
    const [one, two] = cluster.nodes;
    const carol = realtime(one, { clientId: 'carol' });
    await carol.connection.once('connected');
    const onCarol = carol.channels.get('moving');
    const got = [];
    await onCarol.subscribe((m) => got.push(m.data));
    await onCarol.presence.enter('here');
    const watcher = realtime(two, { clientId: 'watcher' });
    const seen = [];
    await watcher.channels.get('moving').presence.subscribe((m) => seen.push([m.action, m.clientId]));
    await eventually(async () => (await watcher.channels.get('moving').presence.get()).length === 1, { what: "carol's member on node 2", timeout: 10000 });
    seen.length = 0; // what its SYNC told it
    const recoveryKey = carol.connection.createRecoveryKey();
    const id = carol.connection.id;
    // Node 1 loses the client (its socket dropped, the library gone); a new one recovers on node 2.
    carol.connection.connectionManager.disconnectAllTransports();
    carol.close();
    const publisher = new Ably.Rest(options(one, { key: KEY }));
    for (let i = 0; i < 5; i++) await publisher.channels.get('moving').publish('m', `while-away-${i}`);
    const back = realtime(two, { clientId: 'carol', recover: recoveryKey });
    await back.connection.once('connected');
    expect(back.connection.id).to.equal(id);
    const onBack = back.channels.get('moving');
    const after = [];
    await onBack.subscribe((m) => after.push(m.data));
    await eventually(() => after.length === 5, { what: 'what it missed, recovered on node 2', timeout: 10000 });
    expect(after).to.deep.equal(Array.from({ length: 5 }, (_, i) => `while-away-${i}`));
    // Its member stayed: a marker update from it is the next event the watcher sees, no leave before it.
    await onBack.presence.update('moved');
    await eventually(() => seen.length >= 1, { what: 'the update', timeout: 10000 });
    expect(seen).to.deep.equal([['update', 'carol']]);
    // Past the dropped socket's grace on node 1 its old entry goes, and the member stays: no leave, still listed.
    await new Promise((resolve) => setTimeout(resolve, GRACE_MS + 2000));
    await onBack.presence.update('still here');
    await eventually(() => seen.length >= 2, { what: 'the second update', timeout: 10000 });
    expect(seen).to.deep.equal([['update', 'carol'], ['update', 'carol']]);
    expect((await watcher.channels.get('moving').presence.get()).map((m) => [m.clientId, m.data])).to.deep.equal([['carol', 'still here']]);
  });

  it('keeps each node\'s view of the members exact through its subscriber connection killed during enters and leaves', async () => {
    const [one, two] = cluster.nodes;
    // A watcher on each node: each node's worker keeps the channel's members from then on.
    const watchers = [realtime(one), realtime(two)];
    await Promise.all(watchers.map((client) => client.channels.get('churn').attach()));
    const rest = new Ably.Rest(options(one, { key: KEY }));
    const listed = async () => JSON.stringify((await rest.channels.get('churn').presence.get()).items.map((m) => m.clientId).sort());
    const present = [];
    for (let round = 0; round < 4; round++) {
      const movers = [0, 1, 2].map((i) => realtime(round % 2 === 0 ? two : one, { clientId: `m${round}.${i}` }));
      const entering = movers.map((m) => m.channels.get('churn').presence.enter('in'));
      for (const m of present.splice(0, 2)) m.close();
      await cluster.redis.command('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await Promise.all(entering);
      await movers[0].channels.get('churn').presence.leave();
      present.push(...movers.slice(1));
      const want = JSON.stringify(present.map((m) => m.auth.clientId).sort());
      await eventually(async () => (await listed()) === want, { what: `round ${round}: the members over REST`, timeout: 10000 });
      // A later attach on either node is told them (its node's view, kept through the kill), as are the watchers.
      for (const node of [one, two]) {
        const late = realtime(node).channels.get('churn');
        await eventually(async () => JSON.stringify((await late.presence.get()).map((m) => m.clientId).sort()) === want, { what: `round ${round}: the members at a later attach`, timeout: 10000 });
      }
      for (const watcher of watchers) {
        await eventually(async () => JSON.stringify((await watcher.channels.get('churn').presence.get()).map((m) => m.clientId).sort()) === want, { what: `round ${round}: a watcher's members`, timeout: 10000 });
      }
    }
  });

  it('refuses a TokenRequest replayed on the other node for as long as its timestamp is taken, past the 5 minutes of a message id', async () => {
    const [one, two] = cluster.nodes;
    const signer = new Ably.Rest({ key: KEY, queryTime: false, endpoint: 'unused.invalid' });
    const exchange = (node, request) =>
      fetch(`http://127.0.0.1:${node.port}/keys/${request.keyName}/requestToken`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(request) });
    const request = await signer.auth.createTokenRequest({ clientId: 'once' });
    expect((await exchange(one, request)).status).to.equal(200);
    const replayed = await exchange(two, request);
    expect([replayed.status, replayed.headers.get('x-ably-errorcode')]).to.deep.equal([401, '40105']);
    // The nonce's claim, aged in Redis as if it were 6 minutes old: past a message id's window, within the TokenRequest's.
    const tag = `gw:{#${APP.appId}.ably-nonces:nonces}`;
    const redis = (...args) => cluster.redis.command(...args);
    expect(Number(await redis('TTL', `${tag}:idemt`))).to.be.above(5 * 60);
    const age = async (minutes) => redis('ZADD', `${tag}:idemt`, String(Date.now() - minutes * 60000), request.nonce);
    await age(6);
    const later = await exchange(two, request);
    expect([later.status, later.headers.get('x-ably-errorcode')]).to.deep.equal([401, '40105']);
    // Aged past the 20 minutes a TokenRequest is taken (10 either side of its timestamp), the claim is gone: the nonce is new again.
    await age(21);
    expect((await exchange(one, request)).status).to.equal(200);
  });
});
