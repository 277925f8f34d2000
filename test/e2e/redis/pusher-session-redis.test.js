// Pusher's presence on the session core across two gateway nodes sharing
// one Redis: the member cap holds for a burst of users on both nodes at
// once (decided by one script where the entries live), and a subscribe
// cancelled by an unsubscribe leaves no member that the other node sees.
import { expect } from 'chai';
import { startRedisNodes } from '../../helpers/redis-nodes.js';
import { configFile } from '../../helpers/api.js';
import { APP, RawPusher, serverSdk } from '../../helpers/pusher.js';
import { presenceRush, signedSubscribe, subscribeAnswer } from '../../helpers/pusher-session.js';

const MAX_MEMBERS = 3;

describe('Pusher on the session core, two Redis nodes', function () {
  this.timeout(60000);
  let cluster;
  const raws = [];

  before(async () => {
    const file = configFile({ pusherApps: [{ ...APP, maxPresenceMembers: MAX_MEMBERS }] });
    cluster = await startRedisNodes(['--config', file]);
  });
  after(async () => {
    for (const raw of raws) raw.close();
    await Promise.all(cluster?.nodes.map((node) => node.stop()) ?? []);
    await cluster?.redis.stop();
  });

  const users = async (node, channel) => (await (await serverSdk(node).get({ path: `/channels/${channel}/users` })).json()).users.map((u) => u.id);

  it('lets exactly maxPresenceMembers users in when more subscribe on both nodes at the same moment', async () => {
    const { raws: rushed, answers } = await presenceRush(cluster.nodes, 8, 'presence-rush');
    raws.push(...rushed);
    expect(answers.filter((a) => a.event === 'pusher_internal:subscription_succeeded')).to.have.length(MAX_MEMBERS);
    expect(answers.filter((a) => a.event === 'pusher:subscription_error').map((a) => a.data.status)).to.deep.equal([403, 403, 403, 403, 403]);
    for (const node of cluster.nodes) expect(await users(node, 'presence-rush')).to.have.length(MAX_MEMBERS);
  });

  it('leaves no member on either node when an unsubscribe follows a presence subscribe at once', async () => {
    const [one, two] = cluster.nodes;
    const raw = await RawPusher.open(one);
    raws.push(raw);
    const socketId = await raw.socketId();
    raw.ws.send(JSON.stringify(signedSubscribe(socketId, 'presence-obs', 'ghost')));
    raw.ws.send(JSON.stringify({ event: 'pusher:unsubscribe', data: { channel: 'presence-obs' } }));
    raw.send(signedSubscribe(socketId, 'presence-marker', 'ghost'));
    expect((await subscribeAnswer(raw, 'presence-marker')).event).to.equal('pusher_internal:subscription_succeeded');
    expect(raw.frames.filter((f) => f.channel === 'presence-obs')).to.deep.equal([]);
    expect(await users(one, 'presence-obs')).to.deep.equal([]);
    expect(await users(two, 'presence-obs')).to.deep.equal([]);
  });
});
