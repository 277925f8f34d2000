// Ably's protocol with the real ably-js (the `ably` package, unchanged)
// against a real gateway of two workers (--balance even: a connection
// lands on the worker holding fewest), in both of its formats: a key and
// a token from a TokenRequest (authCallback), publish and subscribe across
// workers with their ACKs and channelSerials, echo off, a REST publish
// reaching a realtime subscriber, a capability refusal, tokens renewed as
// they expire, a bad key.
import { expect } from 'chai';
import Ably from 'ably';
import WebSocket from 'ws';
import { once } from 'node:events';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { configFile } from '../../helpers/api.js';
import { APP, pusherWebhookEndpoint } from '../../helpers/pusher.js';
import { ablyClients } from '../../helpers/ably.js';
import { clientElsewhere } from '../../helpers/even-balance.js';

const KEY = `${APP.appId}.${APP.key}:${APP.secret}`;

describe('Ably protocol (ably-js)', function () {
  this.timeout(30000);
  let gw;
  const { options, realtime, closeAll } = ablyClients(() => gw);
  const connected = (client) => client.connection.once('connected');
  // Each worker numbers its own connections: the prefix of a connectionId names its worker.
  const workerOf = (client) => client.connection.id.split('-')[0];
  /** A client on another worker than `other` (../../helpers/even-balance.js). */
  const onAnotherWorker = (other, more) => {
    const open = async () => {
      const client = realtime(more);
      await connected(client);
      return { client, worker: workerOf(client) };
    };
    return clientElsewhere(workerOf(other), open, (client) => client.close());
  };

  before(async () => {
    gw = await startGateway(['--config', configFile({ pusherApps: [APP] }), '--balance', 'even']);
  });
  afterEach(closeAll);
  after(() => gw?.stop());

  for (const binary of [false, true]) {
    const format = binary ? 'msgpack' : 'json';

    it(`publishes and subscribes across workers with a key (${format}): ACKed with serials, in order, echo on and off`, async () => {
      const a = realtime({ key: KEY, useBinaryProtocol: binary, clientId: 'alice' });
      await connected(a);
      const b = await onAnotherWorker(a, { key: KEY, useBinaryProtocol: binary, echoMessages: false });
      expect(a.connection.id).to.be.a('string');
      expect(workerOf(a)).to.not.equal(workerOf(b));
      expect(a.auth.clientId).to.equal('alice');
      const [onA, onB] = [a.channels.get(`room-${format}`), b.channels.get(`room-${format}`)];
      const [gotA, gotB] = [[], []];
      await onA.subscribe((m) => gotA.push(m));
      await onB.subscribe((m) => gotB.push(m));
      const sent = [{ name: 'text', data: 'hello' }, { name: 'object', data: { n: 1, nested: [true, null] } }, { name: 'bytes', data: Buffer.from([0, 1, 254, 255]) }];
      const serials = [];
      for (const message of sent) serials.push(...(await onA.publish(message.name, message.data)).serials);
      // One channelSerial each, `<epoch>:<seq>`, the seqs in a row.
      expect(serials.every((serial) => /^[0-9a-z]+:\d+$/.test(serial))).to.equal(true);
      const seqs = serials.map((serial) => Number(serial.split(':')[1]));
      expect(seqs).to.deep.equal([seqs[0], seqs[0] + 1, seqs[0] + 2]);
      await onB.publish('from-b', 'quiet'); // B's own, with echo off: not back to B
      await eventually(() => gotB.length === 3 && gotA.length === 4, { what: 'the messages on both', timeout: 10000 });
      for (const [i, message] of sent.entries()) {
        expect(gotB[i].name).to.equal(message.name);
        expect(gotB[i].data).to.deep.equal(message.data);
        expect(gotB[i].clientId).to.equal('alice');
        expect(gotB[i].connectionId).to.equal(a.connection.id);
      }
      expect(gotA.map((m) => m.name)).to.deep.equal(['text', 'object', 'bytes', 'from-b']);
      expect(gotB.every((m) => m.name !== 'from-b')).to.equal(true);
    });

    it(`connects with a token from a TokenRequest through authCallback (${format})`, async () => {
      const keyed = new Ably.Rest(options({ key: KEY, useBinaryProtocol: binary }));
      const client = realtime({
        useBinaryProtocol: binary,
        authCallback: (params, callback) => keyed.auth.createTokenRequest({ clientId: 'bob', capability: { 'news:*': ['subscribe', 'publish'] } }).then((request) => callback(null, request), (err) => callback(err, null))
      });
      await connected(client);
      expect(client.auth.clientId).to.equal('bob');
      const news = client.channels.get('news:today');
      const got = new Promise((resolve) => news.subscribe((m) => resolve(m)));
      await news.attach();
      await news.publish('headline', 'it works');
      const message = await got;
      expect([message.name, message.data, message.clientId]).to.deep.equal(['headline', 'it works', 'bob']);
      // The capability holds news:* only: another channel refuses the attach with 40160, publishing too.
      const other = client.channels.get('sport');
      const refused = await other.attach().then(() => undefined, (err) => err);
      expect(refused?.code).to.equal(40160);
      const nacked = await client.channels.get('weather').publish('x', 'y').then(() => undefined, (err) => err);
      expect(nacked?.code).to.equal(40160);
    });
  }

  it('delivers a REST publish to a realtime subscriber, and answers it with its serials', async () => {
    const sub = realtime({ key: KEY });
    await connected(sub);
    const channel = sub.channels.get('rest-in');
    const got = [];
    await channel.subscribe((m) => got.push(m));
    const rest = new Ably.Rest(options({ key: KEY }));
    await rest.channels.get('rest-in').publish([{ name: 'one', data: 'first' }, { name: 'two', data: { b: 2 } }]);
    await eventually(() => got.length === 2, { what: 'both REST messages', timeout: 10000 });
    expect(got.map((m) => [m.name, m.data])).to.deep.equal([['one', 'first'], ['two', { b: 2 }]]);
    expect(await rest.time()).to.be.closeTo(Date.now(), 60000);
    // The same route as JSON, by hand: 201 with one serial per message; a wrong key is Ably's 401.
    const post = (auth) => fetch(`${gw.http}/channels/rest-in/messages`, { method: 'POST', headers: { Authorization: `Basic ${Buffer.from(auth).toString('base64')}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'three', data: 'third' }) });
    const res = await post(KEY);
    expect(res.status).to.equal(201);
    const body = await res.json();
    expect(body.channel).to.equal('rest-in');
    expect(body.serials).to.have.length(1);
    await eventually(() => got.length === 3, { what: 'the third', timeout: 10000 });
    expect(body.serials[0]).to.match(/:\d+$/);
    // A message the client named twice (a retry) is published once, both answers with its serial.
    const named = (id) => fetch(`${gw.http}/channels/rest-in/messages`, { method: 'POST', headers: { Authorization: `Basic ${Buffer.from(KEY).toString('base64')}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ id, name: 'named', data: id }) });
    const [first, again] = [await (await named('only-once:0')).json(), await (await named('only-once:0')).json()];
    expect(again.serials).to.deep.equal(first.serials);
    await named('a-marker:0');
    await eventually(() => got.some((m) => m.data === 'a-marker:0'), { what: 'the marker after it', timeout: 10000 });
    expect(got.filter((m) => m.data === 'only-once:0')).to.have.length(1);
    const refused = await post(`${APP.appId}.${APP.key}:wrong`);
    expect(refused.status).to.equal(401);
    expect(refused.headers.get('content-type')).to.equal('application/json');
    expect(refused.headers.get('x-ably-errorcode')).to.equal('40101');
    expect((await refused.json()).error).to.include({ code: 40101, statusCode: 401 });
  });

  for (const binary of [false, true]) {
    it(`recovers a channel across a dropped transport: nothing lost, nothing twice, RESUMED (${binary ? 'msgpack' : 'json'})`, async () => {
      const a = realtime({ key: KEY, useBinaryProtocol: binary });
      const b = realtime({ key: KEY, useBinaryProtocol: binary });
      await Promise.all([connected(a), connected(b)]);
      const name = `resume-${binary}`;
      const [onA, onB] = [a.channels.get(name), b.channels.get(name)];
      const got = [];
      await onB.subscribe((m) => got.push(m.data));
      await onA.publish('n', 'before');
      await eventually(() => got.length === 1, { what: 'the first message', timeout: 10000 });
      const recovered = async () => (await gw.metric('gateway_recoveries_total', '{result="recovered"}')) ?? 0;
      const before = await recovered();
      const attachedAgain = new Promise((resolve) => onB.once('attached', resolve));
      const idBefore = b.connection.id;
      // What ably-js's own resume tests do: the socket goes, the client connects again at once.
      b.connection.connectionManager.disconnectAllTransports();
      for (let i = 0; i < 10; i++) await onA.publish('n', `during-${i}`);
      const change = await attachedAgain;
      expect(change.resumed).to.equal(true);
      // The connection itself was resumed: the same id, no error.
      expect(b.connection.id).to.equal(idBefore);
      expect(b.connection.errorReason).to.equal(null);
      // The re-attach was a recovery from B's channelSerial (what it missed, if anything, replayed).
      await eventually(async () => (await recovered()) > before, { what: 'the recovery counted' });
      for (let i = 0; i < 5; i++) await onA.publish('n', `after-${i}`);
      await eventually(() => got.length === 16, { what: 'every message once', timeout: 10000 });
      expect(got).to.deep.equal(['before', ...Array.from({ length: 10 }, (_, i) => `during-${i}`), ...Array.from({ length: 5 }, (_, i) => `after-${i}`)]);
    });
  }

  for (const binary of [false, true]) {
    const format = binary ? 'msgpack' : 'json';
    it(`keeps presence across workers: enter, update, leave and a close seen by another, get() and REST list the members (${format})`, async () => {
      const name = `lobby-${format}`;
      const a = realtime({ key: KEY, useBinaryProtocol: binary, clientId: 'alice' });
      await connected(a);
      const b = await onAnotherWorker(a, { key: KEY, useBinaryProtocol: binary, clientId: 'bob' });
      expect(workerOf(a)).to.not.equal(workerOf(b));
      const [onA, onB] = [a.channels.get(name), b.channels.get(name)];
      const seen = [];
      await onB.presence.subscribe((m) => seen.push([m.action, m.clientId, m.data]));
      expect(await onB.presence.get()).to.deep.equal([]);
      await onA.presence.enter({ mood: 'here' });
      await onA.presence.update(Buffer.from([1, 2, 3]));
      await eventually(() => seen.length === 2, { what: 'the enter and the update', timeout: 10000 });
      // A third client attaching later is told the members in its SYNC.
      const c = realtime({ key: KEY, useBinaryProtocol: binary });
      await connected(c);
      const members = await c.channels.get(name).presence.get();
      expect(members.map((m) => [m.clientId, m.connectionId, m.data])).to.deep.equal([['alice', a.connection.id, Buffer.from([1, 2, 3])]]);
      await onB.presence.enter('bob is in');
      const rest = new Ably.Rest(options({ key: KEY, useBinaryProtocol: binary }));
      await eventually(async () => (await rest.channels.get(name).presence.get()).items.length === 2, { what: 'two members over REST', timeout: 10000 });
      const listed = (await rest.channels.get(name).presence.get()).items.map((m) => [m.clientId, m.action]).sort();
      expect(listed).to.deep.equal([['alice', 'present'], ['bob', 'present']]);
      // Its status: three attached connections (on both workers), two members of two of them.
      const { status } = await rest.channels.get(name).status();
      expect(status.isActive).to.equal(true);
      expect(status.occupancy.metrics).to.include({ connections: 3, subscribers: 3, presenceMembers: 2, presenceConnections: 2 });
      await onA.presence.leave();
      await eventually(() => seen.length === 4, { what: 'bob\'s enter and alice\'s leave', timeout: 10000 });
      await onA.presence.enter('back');
      a.close();
      await eventually(() => seen.length === 6, { what: 'alice back, then gone with her connection', timeout: 10000 });
      expect(seen).to.deep.equal([
        ['enter', 'alice', { mood: 'here' }],
        ['update', 'alice', Buffer.from([1, 2, 3])],
        ['enter', 'bob', 'bob is in'],
        ['leave', 'alice', undefined],
        ['enter', 'alice', 'back'],
        ['leave', 'alice', undefined]
      ]);
      expect((await onB.presence.get()).map((m) => m.clientId)).to.deep.equal(['bob']);
    });
  }

  it('tells a later attach the members its worker keeps from the channel, equal to a fresh read after enters, updates and leaves', async () => {
    const name = 'kept-view';
    /** Clients made one after another: --balance even alternates workers, unless another test's client takes a turn between. */
    const several = async (count, more) => {
      const made = [];
      for (let i = 0; i < count; i++) {
        made.push(realtime(more));
        await connected(made.at(-1));
      }
      return made;
    };
    // Attached first (on both workers, as a rule): each worker's view of the members is made then, and kept from the channel after.
    const watchers = await several(2, { key: KEY });
    await Promise.all(watchers.map((watcher) => watcher.channels.get(name).attach()));
    const members = ['ann', 'ben', 'cat', 'dan'];
    const present = [];
    for (const clientId of members) present.push(...(await several(1, { key: KEY, clientId })));
    const expected = new Map();
    // A fixed walk of enters, updates and leaves over the four, each acknowledged before the next.
    for (let step = 0; step < 40; step++) {
      const i = (step * 7 + (step >> 2)) % members.length;
      const channel = present[i].channels.get(name);
      if (step % 5 === 4 && expected.has(members[i])) {
        await channel.presence.leave();
        expected.delete(members[i]);
      } else {
        await channel.presence.enter(`step ${step}`).catch(() => channel.presence.update(`step ${step}`));
        await channel.presence.update(`step ${step}`);
        expected.set(members[i], `step ${step}`);
      }
    }
    const want = JSON.stringify([...expected].sort());
    const rest = new Ably.Rest(options({ key: KEY }));
    await eventually(async () => JSON.stringify((await rest.channels.get(name).presence.get()).items.map((m) => [m.clientId, m.data]).sort()) === want, { what: 'the members over REST', timeout: 10000 });
    const agree = async (clients, expected, what) => {
      for (const client of clients) {
        const channel = client.channels.get(name);
        await eventually(async () => JSON.stringify((await channel.presence.get()).map((m) => [m.clientId, m.data]).sort()) === expected, { what: `${what} on worker ${workerOf(client)}`, timeout: 10000 });
      }
    };
    await agree([...(await several(3, { key: KEY })), ...watchers], want, 'the members at a later attach, and at the watchers,');
    // One leaves with its connection: a later attach on either worker no longer lists it.
    const gone = members.find((clientId) => expected.has(clientId));
    present[members.indexOf(gone)].close();
    expected.delete(gone);
    const after = JSON.stringify([...expected].sort());
    await agree([...(await several(3, { key: KEY })), ...watchers], after, `${gone} gone at a later attach, and at the watchers,`);
  });

  it('keeps a resumed connection\'s members: a dropped socket resumed at once is no leave, and a recovered client keeps its id', async () => {
    const a = realtime({ key: KEY, clientId: 'watcher' });
    const b = realtime({ key: KEY, clientId: 'stayer' });
    await Promise.all([connected(a), connected(b)]);
    const [onA, onB] = [a.channels.get('resumed-members'), b.channels.get('resumed-members')];
    const seen = [];
    await onA.presence.subscribe((m) => seen.push([m.action, m.clientId, m.data]));
    await onB.presence.enter('one');
    await eventually(() => seen.length === 1, { what: 'the enter', timeout: 10000 });
    const idBefore = b.connection.id;
    const attachedAgain = new Promise((resolve) => onB.once('attached', resolve));
    b.connection.connectionManager.disconnectAllTransports();
    await attachedAgain;
    expect(b.connection.id).to.equal(idBefore);
    // The marker: an update after the resume is the next event, with no leave (or enter) between.
    await onB.presence.update('two');
    await eventually(() => seen.length >= 2, { what: 'the update', timeout: 10000 });
    expect(seen).to.deep.equal([
      ['enter', 'stayer', 'one'],
      ['update', 'stayer', 'two']
    ]);
    expect((await onA.presence.get()).map((m) => [m.clientId, m.connectionId, m.data])).to.deep.equal([['stayer', idBefore, 'two']]);
    // recover: a new client given the old one's recovery key takes its connection over.
    const recoveryKey = b.connection.createRecoveryKey();
    b.connection.connectionManager.disconnectAllTransports();
    b.close();
    const c = realtime({ key: KEY, clientId: 'stayer', recover: recoveryKey });
    await connected(c);
    expect(c.connection.id).to.equal(idBefore);
    // A key that is not one is a new connection, told 80018; a forged one 80008.
    for (const [recover, code] of [['not-a-key', 80018], [`${idBefore}!${Date.now().toString(36)}!forgedforgedforgedforg`, 80008]]) {
      const d = realtime({ key: KEY, recover: JSON.stringify({ connectionKey: recover, msgSerial: 0, channelSerials: {} }) });
      const change = await d.connection.once('connected');
      expect(d.connection.id).to.not.equal(idBefore);
      expect(change.reason?.code).to.equal(code);
    }
  });

  it('publishes once a MESSAGE sent again on a resumed connection (its ACK lost with the socket): the same serial, delivered once', async () => {
    const open = async (query) => {
      const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/?v=6&format=json&key=${encodeURIComponent(KEY)}${query}`);
      const frames = [];
      ws.on('message', (data) => frames.push(JSON.parse(String(data))));
      await once(ws, 'open');
      await eventually(() => frames.length > 0, { what: 'CONNECTED', timeout: 5000 });
      return { ws, frames };
    };
    const sub = realtime({ key: KEY });
    await connected(sub);
    const got = [];
    await sub.channels.get('once-only').subscribe((m) => got.push(m.data));
    const first = await open('');
    const message = { action: 15, channel: 'once-only', msgSerial: 0, messages: [{ name: 'n', data: 'sent twice' }] };
    first.ws.send(JSON.stringify(message));
    await eventually(() => first.frames.some((f) => f.action === 1), { what: 'the first ACK', timeout: 5000 });
    const serial = first.frames.find((f) => f.action === 1).res[0].serials[0];
    first.ws.terminate();
    const second = await open(`&resume=${encodeURIComponent(first.frames[0].connectionDetails.connectionKey)}`);
    try {
      expect(second.frames[0].connectionId).to.equal(first.frames[0].connectionId);
      second.ws.send(JSON.stringify(message));
      second.ws.send(JSON.stringify({ ...message, msgSerial: 1, messages: [{ name: 'n', data: 'the marker' }] }));
      await eventually(() => got.includes('the marker'), { what: 'the marker', timeout: 5000 });
      expect(second.frames.find((f) => f.action === 1 && f.msgSerial === 0).res[0].serials).to.deep.equal([serial]);
      expect(got).to.deep.equal(['sent twice', 'the marker']);
    } finally {
      second.ws.close();
    }
  });

  it('refuses presence to a connection with no clientId (91000) and without the capability (40160)', async () => {
    // ably-js refuses to send it: by hand, a NACK.
    const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/?v=6&format=json&key=${encodeURIComponent(KEY)}`);
    const frames = [];
    ws.on('message', (data) => frames.push(JSON.parse(String(data))));
    await once(ws, 'open');
    ws.send(JSON.stringify({ action: 14, channel: 'nobody', msgSerial: 0, presence: [{ action: 2, data: 'x' }] }));
    try {
      await eventually(() => frames.some((f) => f.action === 2), { what: 'the NACK', timeout: 5000 });
      expect(frames.find((f) => f.action === 2)).to.deep.include({ msgSerial: 0, count: 1, error: { code: 91000, statusCode: 400, message: 'presence needs a clientId: this connection has none' } });
    } finally {
      ws.close();
    }
    const keyed = new Ably.Rest(options({ key: KEY }));
    const client = realtime({
      authCallback: (params, callback) => keyed.auth.createTokenRequest({ clientId: 'dave', capability: { quiet: ['subscribe'] } }).then((request) => callback(null, request), (err) => callback(err, null))
    });
    await connected(client);
    const nacked = await client.channels.get('quiet').presence.enter('x').then(() => undefined, (err) => err);
    expect(nacked?.code).to.equal(40160);
  });

  it('rewinds a fresh attach: the last 3 messages (params rewind), oldest first, then the live ones', async () => {
    const rest = new Ably.Rest(options({ key: KEY }));
    for (let i = 0; i < 5; i++) await rest.channels.get('rewound').publish('r', `old-${i}`);
    const client = realtime({ key: KEY });
    await connected(client);
    const channel = client.channels.get('rewound', { params: { rewind: '3' } });
    const got = [];
    await channel.subscribe((m) => got.push(m.data));
    expect(channel.params).to.deep.equal({ rewind: '3' });
    await rest.channels.get('rewound').publish('r', 'live');
    await eventually(() => got.length === 4, { what: 'the backlog and the live one', timeout: 10000 });
    expect(got).to.deep.equal(['old-2', 'old-3', 'old-4', 'live']);
    // A time: everything of the last minute; a rewind that is neither fails the channel with 40003.
    const other = realtime({ key: KEY });
    const timed = other.channels.get('rewound', { params: { rewind: '1m' } });
    const all = [];
    await timed.subscribe((m) => all.push(m.data));
    await eventually(() => all.length === 6, { what: 'the last minute', timeout: 10000 });
    const bad = realtime({ key: KEY });
    const refused = await bad.channels.get('rewound', { params: { rewind: 'soon' } }).attach().then(() => undefined, (err) => err);
    expect(refused?.code).to.equal(40003);
  });

  it('exchanges a TokenRequest once: the same one again is refused 40105', async () => {
    const signer = new Ably.Rest(options({ key: KEY }));
    const request = await signer.auth.createTokenRequest({ clientId: 'once' });
    const exchange = () => fetch(`${gw.http}/keys/${request.keyName}/requestToken`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(request) });
    const first = await exchange();
    expect(first.status).to.equal(200);
    expect((await first.json()).clientId).to.equal('once');
    for (let i = 0; i < 2; i++) {
      const replay = await exchange();
      expect(replay.status).to.equal(401);
      expect(replay.headers.get('x-ably-errorcode')).to.equal('40105');
    }
  });

  it('reads a channel\'s history over REST: newest first by default, forwards, limited', async () => {
    const rest = new Ably.Rest(options({ key: KEY }));
    const channel = rest.channels.get('history');
    for (let i = 0; i < 5; i++) await channel.publish('h', `m${i}`);
    const page = await channel.history();
    expect(page.items.map((m) => m.data)).to.deep.equal(['m4', 'm3', 'm2', 'm1', 'm0']);
    expect(page.items[0].serial).to.match(/:\d+$/);
    const forwards = await channel.history({ direction: 'forwards', limit: 2 });
    expect(forwards.items.map((m) => m.data)).to.deep.equal(['m0', 'm1']);
    // A realtime client's history is the same route, through its own REST.
    const client = realtime({ key: KEY, useBinaryProtocol: false });
    await connected(client);
    expect((await client.channels.get('history').history({ limit: 1 })).items.map((m) => m.data)).to.deep.equal(['m4']);
    // Pages: two at a time, each linking the next, in both directions.
    for (const [direction, expected] of [['backwards', [['m4', 'm3'], ['m2', 'm1'], ['m0']]], ['forwards', [['m0', 'm1'], ['m2', 'm3'], ['m4']]]]) {
      const pages = [];
      for (let p = await channel.history({ direction, limit: 2 }); p !== null; p = await p.next()) pages.push(p.items.map((m) => m.data));
      expect(pages, direction).to.deep.equal(expected);
    }
    // untilAttach: what was published before the attach, nothing after it.
    const attached = client.channels.get('history');
    await attached.attach();
    await channel.publish('h', 'after the attach');
    const before = await attached.history({ untilAttach: true });
    expect(before.items.map((m) => m.data)).to.deep.equal(['m4', 'm3', 'm2', 'm1', 'm0']);
    expect((await channel.history({ limit: 1 })).items.map((m) => m.data)).to.deep.equal(['after the attach']);
  });

  it('renews a token that expires: told DISCONNECTED 40142, ably-js asks for another and carries on', async () => {
    const keyed = new Ably.Rest(options({ key: KEY }));
    let asked = 0;
    const client = realtime({
      authCallback: (params, callback) => {
        asked++;
        keyed.auth.createTokenRequest({ clientId: 'carol', ttl: 1500 }).then((request) => callback(null, request), (err) => callback(err, null));
      }
    });
    const states = [];
    client.connection.on((change) => states.push(change.current));
    await connected(client);
    const channel = client.channels.get('renewed');
    const got = [];
    await channel.subscribe((m) => got.push(m.data));
    await eventually(() => asked >= 3, { what: 'two renewals', timeout: 15000 });
    await eventually(() => client.connection.state === 'connected' && channel.state === 'attached', { what: 'connected and attached again', timeout: 10000 });
    await channel.publish('after', 'still here');
    await eventually(() => got.includes('still here'), { what: 'a message after the renewals', timeout: 10000 });
    expect(states).to.not.include('failed');
    expect(client.auth.clientId).to.equal('carol');
  });

  it('takes an ATTACH sent with the upgrade, before CONNECTED has arrived, on a key', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/?v=6&format=json&key=${encodeURIComponent(KEY)}`);
    const frames = [];
    ws.on('message', (data) => frames.push(JSON.parse(String(data))));
    await once(ws, 'open');
    ws.send(JSON.stringify({ action: 10, channel: 'early' }));
    try {
      await eventually(() => frames.some((f) => f.action === 16), { what: 'ATTACHED and the SYNC', timeout: 5000 });
      expect(frames.map((f) => f.action)).to.deep.equal([4, 11, 16]);
      expect(frames[1]).to.include({ channel: 'early' });
      // No member yet: the SYNC says so, with its presence array.
      expect(frames[2]).to.deep.equal({ action: 16, channel: 'early', presence: [] });
    } finally {
      ws.close();
    }
  });

  it('fails a connection with a bad key at once with 40101, told in-band', async () => {
    const bad = realtime({ key: `${APP.appId}.${APP.key}:not-the-secret` });
    const startedAt = Date.now();
    const change = await bad.connection.once('failed');
    expect(change.reason?.code).to.equal(40101);
    expect(Date.now() - startedAt).to.be.below(5000);
  });
});

describe('Ably protocol: --ably-basic-auth and --no-ably', function () {
  this.timeout(30000);

  it('refuses a key in clear under deny (40103, realtime and REST), and a token still connects', async () => {
    const gw = await startGateway(['--config', configFile({ pusherApps: [APP] }), '--ably-basic-auth', 'deny']);
    const { realtime, closeAll } = ablyClients(() => gw);
    try {
      const keyed = realtime({ key: KEY });
      const change = await keyed.connection.once('failed');
      expect(change.reason?.code).to.equal(40103);
      const rest = await fetch(`${gw.http}/channels/x/messages`, { headers: { Authorization: `Basic ${Buffer.from(KEY).toString('base64')}` } });
      expect(rest.status).to.equal(401);
      expect(rest.headers.get('x-ably-errorcode')).to.equal('40103');
      // A TokenRequest needs no key in clear: signed where the key is kept, exchanged for a token.
      const signer = new Ably.Rest({ key: KEY, queryTime: false, endpoint: 'unused.invalid' });
      const tokened = realtime({ authCallback: (params, callback) => signer.auth.createTokenRequest({ clientId: 'erin' }).then((request) => callback(null, request), (err) => callback(err, null)) });
      await tokened.connection.once('connected');
      expect(tokened.auth.clientId).to.equal('erin');
    } finally {
      closeAll();
      await gw.stop();
    }
  });

  it('serves nothing of Ably with --no-ably: / and its REST routes are not found', async () => {
    const gw = await startGateway(['--config', configFile({ pusherApps: [APP] }), '--no-ably']);
    try {
      expect((await fetch(`${gw.http}/time`)).status).to.equal(404);
      const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/?v=6&format=json&key=${encodeURIComponent(KEY)}`);
      const [outcome] = await Promise.race([once(ws, 'unexpected-response').then(([, res]) => [res.statusCode]), once(ws, 'open').then(() => ['open'])]);
      expect(outcome).to.equal(404);
    } finally {
      await gw.stop();
    }
  });
});

describe('Ably protocol: an app\'s key capabilities and further keys', function () {
  this.timeout(30000);
  const SECRET = 'restricted-app-secret-0123';
  const app = {
    appId: 'limited',
    key: 'own',
    secret: SECRET,
    ablyCapability: { 'open:*': ['*'] },
    ablyKeys: [{ keyId: 'reader', secret: 'reader-secret-0123456789', capability: { '*': ['subscribe', 'history'] } }]
  };
  let gw;
  const { realtime, closeAll } = ablyClients(() => gw);

  before(async () => {
    gw = await startGateway(['--config', configFile({ pusherApps: [app] })]);
  });
  after(async () => {
    closeAll();
    await gw?.stop();
  });

  it('holds each key to its capability: the app\'s own to ablyCapability, a further key to its own, tokens within them', async () => {
    const own = realtime({ key: `limited.own:${SECRET}` });
    await own.connection.once('connected');
    await own.channels.get('open:a').attach();
    expect((await own.channels.get('closed').attach().then(() => undefined, (err) => err))?.code).to.equal(40160);
    const reader = realtime({ key: 'limited.reader:reader-secret-0123456789' });
    await reader.connection.once('connected');
    const got = [];
    await reader.channels.get('open:a').subscribe((m) => got.push(m.data));
    expect((await reader.channels.get('open:a').publish('x', 'y').then(() => undefined, (err) => err))?.code).to.equal(40160);
    await own.channels.get('open:a').publish('x', 'from the own key');
    await eventually(() => got.length === 1, { what: 'the reader subscribed', timeout: 10000 });
    // The reader's secret is not the app's: a key pairing them is refused.
    const mixed = realtime({ key: `limited.reader:${SECRET}` });
    expect((await mixed.connection.once('failed')).reason?.code).to.equal(40101);
    // A token from the reader key asking to publish is refused: nothing of it is within the key's.
    const signer = new Ably.Rest({ key: 'limited.reader:reader-secret-0123456789', queryTime: false, endpoint: 'unused.invalid' });
    const request = await signer.auth.createTokenRequest({ capability: { '*': ['publish'] } });
    const refused = await fetch(`${gw.http}/keys/limited.reader/requestToken`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(request) });
    expect(refused.status).to.equal(401);
    expect(refused.headers.get('x-ably-errorcode')).to.equal('40160');
    // One asking for what the key has connects with it.
    const tokened = realtime({ authCallback: (params, callback) => signer.auth.createTokenRequest({ capability: { 'open:*': ['subscribe'] } }).then((r) => callback(null, r), (err) => callback(err, null)) });
    await tokened.connection.once('connected');
    await tokened.channels.get('open:b').attach();
    expect((await tokened.channels.get('elsewhere').attach().then(() => undefined, (err) => err))?.code).to.equal(40160);
  });
});

describe('Ably protocol: the app\'s webhooks', function () {
  this.timeout(30000);
  let gw;
  let endpoint;
  const { realtime, closeAll } = ablyClients(() => gw);

  before(async () => {
    endpoint = await pusherWebhookEndpoint();
    gw = await startGateway(['--config', configFile({ pusherApps: [{ ...APP, webhookUrl: endpoint.url }], memberGrace: 0 })]);
  });
  after(async () => {
    closeAll();
    await gw?.stop();
    endpoint?.server.close();
  });

  it('tells them of an Ably channel\'s occupancy and members, named as Ably names them and marked as Ably\'s, signed as the app\'s are', async () => {
    const alice = realtime({ key: KEY, clientId: 'alice' });
    await alice.connection.once('connected');
    const channel = alice.channels.get('hooked');
    await channel.attach();
    await channel.presence.enter('hi');
    await channel.presence.leave();
    await channel.detach();
    const events = () => endpoint.events.filter((e) => e.channel === 'hooked');
    await eventually(() => events().length === 4, { what: 'occupied, added, removed and vacated', timeout: 10000 });
    // Each once; a member's departure passes through its grace, so it may come after the vacancy.
    expect([...events()].sort((a, b) => a.name.localeCompare(b.name))).to.deep.equal([
      { name: 'channel_occupied', channel: 'hooked', protocol: 'ably' },
      { name: 'channel_vacated', channel: 'hooked', protocol: 'ably' },
      { name: 'member_added', channel: 'hooked', user_id: 'alice', protocol: 'ably' },
      { name: 'member_removed', channel: 'hooked', user_id: 'alice', protocol: 'ably' }
    ]);
    expect(endpoint.refused).to.equal(0);
  });
});
