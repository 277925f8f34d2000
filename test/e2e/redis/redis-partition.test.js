// The Redis engine under a network partition: two gateway nodes and their
// redis-server, each in a network namespace of its own on a private bridge
// (scripts/harness/netns.js); node 1 is cut from Redis by dropping its
// packets (no FIN, no RST). It needs root (network namespaces, iptables), as
// CI has; elsewhere the suite is skipped with one line saying why.
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { eventually } from '../../../scripts/harness/gateway.js';
import { unsupported } from '../../../scripts/harness/netns.js';
import { PartitionLab } from '../../../scripts/harness/partition.js';
import { configFile } from '../../helpers/api.js';
import { API_KEY, httpPublish } from '../../helpers/client-helpers.js';
import { SECRET } from '../../helpers/tokens.js';
import { WebhookEndpoint, WEBHOOK_SECRET } from '../../helpers/webhook-endpoint.js';
import { PRESENCE_NAMESPACES, applyDiffs, diffsOf, member, named, presenceOf } from '../../helpers/presence.js';
import { APP, connected, pusherClient, subscribed } from '../../helpers/pusher.js';

const TTL_S = 2;
const GRACE_MS = 300;

describe('redis engine under a network partition (network namespaces)', function () {
  this.timeout(60000);
  let lab;
  let endpoint;
  let dir;
  let n1;
  let n2;
  const clients = [];
  const track = (client) => (clients.push(client), client);
  /** Cut node 1 for --presence-ttl + 4 s, as a partition much longer than the TTL, once `swept()` says the others took its clients out. */
  const cutPastTtl = async (swept) => {
    lab.cut(n1);
    const cutAt = Date.now();
    await swept();
    await new Promise((resolve) => setTimeout(resolve, cutAt + TTL_S * 1000 + 4000 - Date.now()));
    lab.heal(n1);
  };

  before(async function () {
    const reason = unsupported();
    if (reason !== undefined) {
      console.log(`    skipped: ${reason}`);
      this.skip();
    }
    dir = mkdtempSync(path.join(os.tmpdir(), 'gateway-partition-'));
    endpoint = new WebhookEndpoint(WEBHOOK_SECRET);
    const hooksSocket = path.join(dir, 'hooks');
    endpoint.server.listen(hooksSocket);
    await once(endpoint.server, 'listening');
    const args = ['--workers', '1', '--config', configFile({ ...PRESENCE_NAMESPACES, pusherApps: [APP] }), '--auth', 'jwt', '--jwt-secret', SECRET, '--api-key', API_KEY];
    args.push('--presence-ttl', String(TTL_S), '--join-leave-interval', '200', '--member-grace', String(GRACE_MS), '--webhook-secret', WEBHOOK_SECRET);
    lab = await PartitionLab.start({ args, hooksSocket });
    [n1, n2] = lab.nodes;
  });
  afterEach(() => {
    if (lab !== undefined) for (const node of lab.nodes) lab.heal(node);
    for (const client of clients.splice(0)) {
      if ('connection' in client) client.disconnect(); // pusher-js
      else client.close();
    }
  });
  after(async () => {
    await lab?.stop();
    endpoint?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('reports a silent partition within 2 s, refuses publishes at once while it lasts, and acks again within 2 s of the heal, losing or doubling nothing acked', async () => {
    const subscribers = [];
    for (const node of [n1, n2]) {
      const client = track(await member(node.url, `s-${node.name}`));
      await client.subscribe('plain:cut');
      subscribers.push(client);
    }
    const acked = new Set();
    let stop = false;
    let i = 0;
    // Publishes on both nodes, one at a time each; a refusal is not acked.
    const load = [n1, n2].map(async (node) => {
      while (!stop) {
        const data = `${node.name}-${++i}`;
        await httpPublish(node, 'plain:cut', data).then(
          () => acked.add(data),
          () => {}
        );
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    });
    await eventually(() => acked.size >= 20, { what: 'publishes acked before the cut' });

    lab.cut(n1);
    await eventually(async () => (await n1.request('/health')).body.status === 'degraded', { timeout: 2000, what: 'degraded within 2 s' });
    expect((await n1.request('/health')).status).to.equal(200);
    expect(await n1.metric('gateway_engine_up')).to.equal(0);
    expect(await n2.metric('gateway_engine_up')).to.equal(1);
    const refusedAt = Date.now();
    const refused = await n1.request('/publish', { method: 'POST', headers: { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ channel: 'plain:cut', data: 'refused' }) });
    expect(refused.status).to.equal(503);
    expect(refused.body.error).to.equal('unavailable');
    expect(Date.now() - refusedAt).to.be.below(1000); // not Redis' 5 s command timeout
    const ackedDuringCut = acked.size;
    await eventually(() => acked.size >= ackedDuringCut + 10, { what: 'node 2 acking on' });

    lab.heal(n1);
    await eventually(() => httpPublish(n1, 'plain:cut', 'healed'), { timeout: 2000, interval: 20, what: 'an ack within 2 s of the heal' });
    acked.add('healed');
    stop = true;
    await Promise.all(load);
    await httpPublish(n2, 'plain:cut', 'last');
    acked.add('last');
    for (const subscriber of subscribers) {
      await subscriber.next((f) => f.type === 'message' && f.data === 'last', 15000);
      const messages = subscriber.messages('plain:cut');
      const seqs = messages.map((m) => m.seq);
      expect(seqs).to.deep.equal(seqs.map((_, k) => seqs[0] + k)); // in order, each once
      const received = new Set(messages.map((m) => m.data));
      expect(received.size).to.equal(messages.length);
      expect([...acked].filter((data) => !received.has(data))).to.deep.equal([]);
    }
    const lines = (node, msg) => node.logs.filter((l) => l.msg.startsWith(msg)).length;
    await eventually(() => lines(n1, 'redis engine: Redis answers again') === 1, { what: 'the line saying Redis answers again' });
    expect(lines(n1, 'redis engine: Redis unreachable')).to.equal(1);
    expect(lines(n2, 'redis engine: Redis unreachable')).to.equal(0);
  });

  it('after a partition longer than --presence-ttl, every member list equals a fresh read on both nodes, and member webhooks come once each way', async () => {
    const channel = 'room:split';
    const ann = track(await member(n1.url, 'ann'));
    const bob = track(await member(n2.url, 'bob'));
    const lists = [];
    for (const client of [ann, bob]) {
      await client.subscribe(channel);
      lists.push({ client, read: await presenceOf(client, channel) });
    }
    const annId = ann.welcome.connectionId;
    const memberEvents = (user) => endpoint.events.filter((e) => e.channel === channel && e.user === user).map((e) => e.name);
    await eventually(() => memberEvents('ann').length === 1 && memberEvents('bob').length === 1, { what: 'both members added' });
    await eventually(() => Object.hasOwn(lists[0].read, annId) || named(ann, channel, 'joins', annId), { what: "ann's own entry" });

    // Node 1's log says when every one of its Redis connections answers again, its subscriber's included.
    const upLines = () => n1.logs.filter((l) => l.msg.startsWith('redis engine: Redis answers again')).length;
    const upBefore = upLines();
    // The surviving node's sweep takes ann out once her entry lapses, and the grace ends.
    await cutPastTtl(async () => {
      await eventually(() => named(bob, channel, 'leaves', annId), { timeout: TTL_S * 1000 + 5000, what: "ann's leave on bob's node" });
      await eventually(() => memberEvents('ann').includes('member_removed'), { what: 'member_removed for ann' });
    });

    await eventually(() => named(bob, channel, 'joins', annId) && diffsOf(bob, channel).findLast((d) => Object.hasOwn(d.joins, annId) || Object.hasOwn(d.leaves, annId)).joins[annId], {
      timeout: 10000,
      what: "ann's join again on bob's node"
    });
    // A marker after the member events: a third member's arrival on node 1, taken after them, once
    // node 1's subscriber is back (a diff published while it reconnects does not reach node 1).
    await eventually(() => upLines() > upBefore, { what: "node 1's Redis connections all answering again" });
    const cid = track(await member(n1.url, 'cid'));
    await cid.subscribe(channel);
    await eventually(() => memberEvents('cid').includes('member_added'), { what: "the marker's member_added" });
    expect(memberEvents('ann')).to.deep.equal(['member_added', 'member_removed', 'member_added']);
    expect(memberEvents('bob')).to.deep.equal(['member_added']);
    // A client never receives its own departure while connected.
    expect(named(ann, channel, 'leaves', annId)).to.equal(false);
    for (const { client, read } of lists) {
      await eventually(
        async () => {
          const fresh = await presenceOf(client, channel);
          return Object.keys(fresh).length === 3 && JSON.stringify(sorted(applyDiffs(read, diffsOf(client, channel)))) === JSON.stringify(sorted(fresh));
        },
        { what: `${client.welcome.connectionId}'s list equal to a fresh read` }
      );
    }
    expect(sorted(await presenceOf(ann, channel))).to.deep.equal(sorted(await presenceOf(bob, channel)));
  });

  it("tells Pusher's presence members the same: member_removed during the cut, member_added after it, once each", async () => {
    const alice = track(pusherClient(n1, { member: { user_id: 'alice', user_info: { n: 1 } } }));
    const bob = track(pusherClient(n2, { member: { user_id: 'bob' } }));
    await Promise.all([connected(alice), connected(bob)]);
    await subscribed(alice, 'presence-split');
    const { channel: room } = await subscribed(bob, 'presence-split');
    const seen = [];
    room.bind('pusher:member_added', (m) => seen.push(`added ${m.id}`));
    room.bind('pusher:member_removed', (m) => seen.push(`removed ${m.id}`));
    await eventually(() => room.members.count === 2, { what: 'both members' });

    await cutPastTtl(() => eventually(() => seen.includes('removed alice'), { timeout: TTL_S * 1000 + 5000, what: "alice's member_removed on bob's node" }));
    await eventually(() => seen.includes('added alice'), { timeout: 10000, what: "alice's member_added after the heal" });
    // The marker: a third member's arrival on node 1, after alice's.
    const carol = track(pusherClient(n1, { member: { user_id: 'carol' } }));
    await connected(carol);
    await subscribed(carol, 'presence-split');
    await eventually(() => seen.includes('added carol'), { what: "carol's member_added" });
    expect(seen).to.deep.equal(['removed alice', 'added alice', 'added carol']);
    expect(Object.keys(room.members.members).sort()).to.deep.equal(['alice', 'bob', 'carol']);
  });
});

function sorted(list) {
  return Object.fromEntries(Object.entries(list).sort(([x], [y]) => x.localeCompare(y)));
}
