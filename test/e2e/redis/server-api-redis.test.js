// The server API where the behaviour is the engine's, under --engine redis
// with two gateway nodes sharing one Redis: history sizes per namespace,
// latest, an idempotencyKey sent to both nodes at once, versions out of
// order, and a user's connections subscribed on both nodes.
import { expect } from 'chai';
import { TestClient } from '../../helpers/client.js';
import { API_KEY } from '../../helpers/client-helpers.js';
import { NAMESPACES, api, configFile, result } from '../../helpers/api.js';
import { startRedisNodes } from '../../helpers/redis-nodes.js';
import { SECRET, joseHs256 } from '../../helpers/tokens.js';
import { eventually } from '../../helpers/wait.js';

describe('namespaces and the server API (redis engine, two nodes)', function () {
  let redis;
  let a;
  let b;
  const clients = [];

  before(async () => {
    ({ redis, nodes: [a, b] } = await startRedisNodes(['--config', configFile(NAMESPACES), '--api-key', API_KEY, '--auth', 'jwt', '--jwt-secret', SECRET]));
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.remove();
  });
  /** A connection signed in as `user` on each of `nodes`. */
  const signedIn = (user, nodes) =>
    Promise.all(
      nodes.map(async (gw) => {
        const client = await TestClient.connect(gw.url);
        clients.push(client);
        await client.request({ type: 'auth', token: await joseHs256({ sub: user }) });
        return client;
      })
    );

  it('keeps each namespace its own history size, and the latest message follows a subscribe', async () => {
    for (let i = 1; i <= 5; i++) {
      await result(i % 2 ? a : b, 'publish', { channel: 'chat:r', data: i });
      await result(i % 2 ? b : a, 'publish', { channel: 'r', data: i });
    }
    expect((await result(b, 'history', { channel: 'chat:r' })).messages.map((m) => m.data)).to.deep.equal([1, 2, 3, 4, 5]);
    expect((await result(a, 'history', { channel: 'r' })).messages.map((m) => m.data)).to.deep.equal([3, 4, 5]);
    expect((await api(a, 'history', { channel: 'r', limit: 4 })).status).to.equal(400);
    expect(Number(await redis.command('TTL', 'gw:{chat:r}:state'))).to.be.above(300); // the namespace's 600 s, not the top level's 300

    const last = await result(a, 'publish', { channel: 'prices:R', data: { p: 7 } });
    const client = await TestClient.connect(b.url);
    clients.push(client);
    await client.request({ type: 'auth', token: await joseHs256({ sub: 'r1', subscribe: ['*'] }) });
    expect(await client.subscribe('prices:R')).to.include({ seq: last.seq, latest: true });
    expect(await client.next((f) => f.type === 'message')).to.include({ seq: last.seq }).and.deep.include({ data: { p: 7 } });
  });

  it('publishes once when the same idempotencyKey reaches both nodes at once; versions out of order never go backwards', async () => {
    const answers = await Promise.all([a, b, a, b].map((gw, i) => result(gw, 'publish', { channel: 'chat:race', data: i, idempotencyKey: 'once' })));
    expect(answers.filter((r) => r.skipped === undefined)).to.have.length(1);
    expect(answers.filter((r) => r.skipped === 'duplicate')).to.have.length(3);
    expect(new Set(answers.map((r) => `${r.seq}.${r.epoch}`)).size).to.equal(1);
    expect((await result(a, 'history', { channel: 'chat:race' })).messages).to.have.length(1);

    const skipped = [];
    for (const [i, version] of [3, 1, 2, 5, 4, 6].entries()) skipped.push((await result(i % 2 ? a : b, 'publish', { channel: 'prices:T', data: version, version })).skipped ?? 'ok');
    expect(skipped).to.deep.equal(['ok', 'stale', 'stale', 'ok', 'stale', 'ok']);
    expect((await result(b, 'history', { channel: 'prices:T' })).messages.map((m) => m.data)).to.deep.equal([6]);
  });

  it('subscribes a user\'s connections on both nodes, and its messages reach them', async () => {
    const users = await signedIn('r2', [a, b]);
    expect(await result(a, 'subscribe', { user: 'r2', channel: 'inbox:r2' })).to.deep.equal({ subscribed: 2 });
    for (const client of users) await client.next((f) => f.type === 'subscribed');
    const { seq } = await result(b, 'publish', { channel: 'inbox:r2', data: 'hi' });
    for (const client of users) await client.next((f) => f.type === 'message' && f.seq === seq);
    expect(await result(b, 'channels', { prefix: 'inbox:' })).to.deep.equal({ channels: { 'inbox:r2': { subscribers: 2 } } });
    expect((await result(a, 'info')).nodes).to.have.length(2);
    expect(await result(b, 'unsubscribe', { user: 'r2', channel: 'inbox:r2' })).to.deep.equal({ unsubscribed: 2 });
    expect(await result(a, 'disconnect', { user: 'r2' })).to.deep.equal({ disconnected: 2 });
  });

  it('answers a subscribe once the node holds it: a publish right after the answer reaches the user while the node resubscribes', async () => {
    const [user] = await signedIn('r3', [a]);
    // Every node's subscriptions drop: a channel routed now is subscribed once the connection is back.
    await redis.command('CLIENT', 'KILL', 'TYPE', 'pubsub');
    expect(await result(a, 'subscribe', { user: 'r3', channel: 'inbox:r3' })).to.deep.equal({ subscribed: 1 });
    const { seq } = await result(b, 'publish', { channel: 'inbox:r3', data: 'right after' });
    expect(await user.next((f) => f.type === 'message' && f.channel === 'inbox:r3')).to.include({ seq, data: 'right after' });
  });

  it('reaches a node whose subscriber is reconnecting: a disconnect sent meanwhile closes the user on both nodes', async () => {
    const users = await signedIn('r4', [a, b]);
    // The call goes out while both nodes' subscribers reconnect: node b misses it, and gets it again.
    await redis.command('CLIENT', 'KILL', 'TYPE', 'pubsub');
    expect(await result(a, 'disconnect', { user: 'r4' })).to.deep.equal({ disconnected: 2 });
    for (const client of users) await eventually(() => client.ws.readyState === client.ws.CLOSED, { what: 'the user closed on its node' });
  });

  // Last: it stops node b.
  it('is not kept waiting by a node that stopped: a graceful stop leaves the registry of live nodes', async () => {
    expect((await result(a, 'info')).nodes).to.have.length(2);
    b.proc.kill('SIGTERM');
    await b.exited;
    const askedAt = Date.now();
    expect((await result(a, 'info')).nodes).to.have.length(1);
    expect(Date.now() - askedAt).to.be.below(1500); // not the 2 s a call waits for a live node's answer
  });
});
