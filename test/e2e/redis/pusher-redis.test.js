// Pusher's protocol on two gateway nodes sharing one Redis, with pusher-js 8
// and the pusher SDK: members across nodes, client events across nodes,
// terminate_connections on every node, channel counts cluster-wide, and the
// app's webhooks in Pusher's format, each once for the cluster, verified as
// the SDK verifies them.
import { expect } from 'chai';
import { startRedisNodes } from '../../helpers/redis-nodes.js';
import { configFile } from '../../helpers/api.js';
import { APP, channelAuth, connected, eventually, pusherClient, pusherWebhookEndpoint, RawPusher, serverSdk, subscribed } from '../../helpers/pusher.js';

describe('Pusher on two Redis nodes', function () {
  this.timeout(60000);
  let cluster;
  let endpoint;
  const clients = [];
  const track = (client) => (clients.push(client), client);
  const named = (name, channel) => endpoint.events.filter((e) => e.name === name && e.channel === channel);

  before(async () => {
    endpoint = await pusherWebhookEndpoint();
    const file = configFile({ pusherApps: [{ ...APP, clientEvents: true, webhookUrl: endpoint.url }], memberGrace: 300 });
    cluster = await startRedisNodes(['--config', file]);
  });
  after(async () => {
    await Promise.all(cluster?.nodes.map((node) => node.stop()) ?? []);
    await cluster?.redis.stop();
    endpoint?.server.close();
  });
  afterEach(() => {
    for (const client of clients.splice(0)) {
      if (client instanceof RawPusher) client.close();
      else client.disconnect();
    }
  });

  it('tells members across nodes, counts channels cluster-wide, and sends each webhook once, signed as Pusher signs', async () => {
    const [one, two] = cluster.nodes;
    const alice = track(pusherClient(one, { member: { user_id: 'alice', user_info: { n: 1 } } }));
    const bob = track(pusherClient(two, { member: { user_id: 'bob', user_info: { n: 2 } } }));
    await Promise.all([connected(alice), connected(bob)]);
    const { channel: room } = await subscribed(alice, 'presence-hall');
    const added = [];
    const removed = [];
    room.bind('pusher:member_added', (m) => added.push(m.id));
    room.bind('pusher:member_removed', (m) => removed.push(m.id));
    const { channel: bobRoom, data } = await subscribed(bob, 'presence-hall');
    expect(data.count).to.equal(2);
    await eventually(() => added.includes('bob'), { what: "bob's member_added on the other node" });

    const counts = await (await serverSdk(one).get({ path: '/channels/presence-hall', params: { info: 'user_count,subscription_count' } })).json();
    expect(counts).to.deep.equal({ occupied: true, user_count: 2, subscription_count: 2 });

    const heard = new Promise((resolve) => room.bind('client-wave', (d, meta) => resolve([d, meta.user_id])));
    bobRoom.trigger('client-wave', { hi: true });
    expect(await heard).to.deep.equal([{ hi: true }, 'bob']);

    const miss = track(await RawPusher.open(two));
    miss.send({ event: 'pusher:subscribe', data: { channel: 'cache-board' } });
    await miss.event('pusher:cache_miss', 'cache-board');

    bob.disconnect();
    await eventually(() => removed.includes('bob'), { what: "bob's member_removed on the other node" });

    // Each webhook leaves in its own batch, in its own time: all of them arrived before any is checked.
    const arrived = () => ['channel_occupied', 'member_removed', 'client_event'].every((name) => named(name, 'presence-hall').length > 0) && named('member_added', 'presence-hall').length === 2 && named('cache_miss', 'cache-board').length > 0;
    await eventually(arrived, { what: 'the webhooks: occupied, both member_added, member_removed, the client event, the cache miss', timeout: 15000 });
    expect(named('member_removed', 'presence-hall')).to.have.length(1);
    expect(named('channel_occupied', 'presence-hall')).to.have.length(1);
    expect(named('member_added', 'presence-hall').map((e) => e.user_id).sort()).to.deep.equal(['alice', 'bob']);
    expect(named('member_removed', 'presence-hall').map((e) => e.user_id)).to.deep.equal(['bob']);
    const [clientEvent] = named('client_event', 'presence-hall');
    expect(clientEvent).to.include({ event: 'client-wave', user_id: 'bob', data: '{"hi":true}' });
    expect(clientEvent.socket_id).to.match(/^\d+\.\d+$/);
    expect(named('cache_miss', 'cache-board')).to.have.length(1);
    alice.disconnect();
    await eventually(() => named('channel_vacated', 'presence-hall').length === 1, { what: 'the vacated webhook', timeout: 15000 });
    expect(endpoint.refused).to.equal(0);
  });

  it('terminate_connections closes the user\'s connections on both nodes, and no one else\'s', async () => {
    const [one, two] = cluster.nodes;
    const sdk = serverSdk(one);
    const make = (node, id) =>
      track(pusherClient(node, { userAuthentication: { customHandler: ({ socketId }, cb) => cb(null, sdk.authenticateUser(socketId, { id })) } }));
    const here = make(one, 'zed');
    const there = make(two, 'zed');
    const other = make(two, 'yan');
    await Promise.all([here, there, other].map(connected));
    for (const client of [here, there, other]) client.signin();
    await eventually(() => [here, there, other].every((c) => c.user.serverToUserChannel?.subscribed), { what: 'signed in, user channels held' });
    const codes = [undefined, undefined];
    [here, there].forEach((client, i) => client.connection.bind('error', (err) => (codes[i] ??= err.data?.code)));
    expect((await serverSdk(two).terminateUserConnections('zed')).status).to.equal(200);
    await eventually(() => codes.every((code) => code !== undefined), { what: "the error at both of the user's clients", timeout: 10000 });
    expect(codes).to.deep.equal([4009, 4009]);
    expect(other.connection.state).to.equal('connected');
  });

  it('answers a sign-in once the user is reachable: sendToUser right after signin_success arrives while the node resubscribes', async () => {
    const [one, two] = cluster.nodes;
    const raw = track(await RawPusher.open(one));
    const userData = JSON.stringify({ id: 'quinn' });
    const auth = channelAuth(`${await raw.socketId()}::user::${userData}`);
    // Every node's subscriptions drop: a channel routed now is subscribed once the connection is back.
    await cluster.redis.command('CLIENT', 'KILL', 'TYPE', 'pubsub');
    raw.send({ event: 'pusher:signin', data: { auth, user_data: userData } });
    await raw.event('pusher:signin_success');
    expect((await serverSdk(two).sendToUser('quinn', 'note', { n: 1 })).status).to.equal(200);
    expect((await raw.event('note', '#server-to-user-quinn')).data).to.deep.equal({ n: 1 });
  });
});
