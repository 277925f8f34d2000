// Counts across two gateway nodes sharing one real redis-server: the
// cluster calls behind the server API's `info` and `channels` and Pusher's
// channel list, subscription_count and user_count never drop the other
// node's answer, however the calls race; Pusher's subscription_count event reaches every node's subscribers
// with the cluster's count, and again after a node's subscriber connection
// to Redis was killed.
import { expect } from 'chai';
import { startRedisNodes } from '../../helpers/redis-nodes.js';
import { configFile, result } from '../../helpers/api.js';
import { API_KEY } from '../../helpers/client-helpers.js';
import { TestClient } from '../../helpers/client.js';
import { APP, connected, eventually, pusherClient, serverSdk, subscribed } from '../../helpers/pusher.js';

const ROUNDS = 40;

describe('counts across nodes (redis engine, two nodes)', function () {
  this.timeout(60000);
  let redis;
  let a;
  let b;
  const closers = [];

  before(async () => {
    const config = configFile({ pusherApps: [{ ...APP, subscriptionCount: true }] });
    ({ redis, nodes: [a, b] } = await startRedisNodes(['--workers', '1', '--config', config, '--api-key', API_KEY]));
  });
  afterEach(() => {
    for (const close of closers.splice(0)) close();
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.remove();
  });

  it("answers every concurrent info and channels call, native and Pusher's, on both nodes with both nodes in it", async () => {
    for (const [gw, user] of [[a, 'ann'], [b, 'bob']]) {
      const client = await TestClient.connect(gw.url);
      closers.push(() => client.close());
      await client.subscribe('both');
      const pusher = pusherClient(gw, { member: { user_id: user } });
      closers.push(() => pusher.disconnect());
      await connected(pusher);
      await subscribed(pusher, 'presence-both');
    }
    const pusherChannels = async (gw) => (await serverSdk(gw).get({ path: '/channels', params: { filter_by_prefix: 'presence-', info: 'user_count' } })).json();
    const pusherCount = async (gw) => (await serverSdk(gw).get({ path: '/channels/presence-both', params: { info: 'subscription_count,user_count' } })).json();
    const asks = [
      [(gw) => result(gw, 'info'), (answer) => answer.nodes.length === 2],
      [(gw) => result(gw, 'channels', { prefix: 'both' }), (answer) => answer.channels.both?.subscribers === 2],
      [pusherChannels, (answer) => answer.channels['presence-both']?.user_count === 2],
      [pusherCount, (answer) => answer.subscription_count === 2 && answer.user_count === 2]
    ];
    const incomplete = [];
    for (let round = 0; round < ROUNDS; round++) {
      const complete = await Promise.all(asks.flatMap(([ask, whole]) => [a, b].map(async (gw) => whole(await ask(gw)))));
      if (!complete.every(Boolean)) incomplete.push(round);
    }
    expect(incomplete, 'rounds with an answer missing a node').to.deep.equal([]);
  });

  it("tells every node's subscribers the cluster's subscription_count, and again after a subscriber connection was killed", async () => {
    const heard = [];
    const make = async (gw, log) => {
      const client = pusherClient(gw);
      closers.push(() => client.disconnect());
      await connected(client);
      const { channel } = await subscribed(client, 'counted');
      if (log) channel.bind('pusher:subscription_count', (data) => log.push(data.subscription_count));
      return client;
    };
    await make(a, heard);
    await eventually(() => heard.at(-1) === 1, { what: 'the count of one' });
    await make(b);
    await eventually(() => heard.at(-1) === 2, { what: "node 1's subscriber told of node 2's" });
    const count = async (gw) => (await (await serverSdk(gw).get({ path: '/channels/counted', params: { info: 'subscription_count' } })).json()).subscription_count;
    expect([await count(a), await count(b)]).to.deep.equal([2, 2]);

    // Node 2's count sent while node 1 is not subscribed never reaches it: node 1 counts again once it is.
    const joining = make(b);
    await redis.command('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await joining;
    await eventually(() => heard.at(-1) === 3, { what: 'the count of three on node 1', timeout: 10000 });
    expect([await count(a), await count(b)]).to.deep.equal([3, 3]);
  });
});
