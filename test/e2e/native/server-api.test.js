// Namespaces and the server API against a real gateway (memory engine, two
// workers, --auth jwt): history sizes side by side, latest, clientPublish,
// every method of POST /api/<method> with its bad input, server-side
// subscriptions (the API's and the token's `channels`) recovered after a
// reconnect, idempotent and versioned publishes.
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';
import { SseReader } from '../../helpers/sse.js';
import { API_KEY, nodeClient, whenOpen } from '../../helpers/client-helpers.js';
import { NAMESPACES, api, configFile, result } from '../../helpers/api.js';
import { SECRET, joseHs256 } from '../../helpers/tokens.js';

const MAX_PAYLOAD = 65536;

describe('namespaces and the server API (memory engine)', function () {
  let gw;
  const clients = [];
  const token = (sub, claims = {}) => joseHs256({ sub, subscribe: ['*'], publish: ['*'], ...claims });
  /** A raw client, authenticated (with the auth frame's extra fields). */
  const authed = async (sub, claims, extra = {}) => {
    const client = await TestClient.connect(gw.url);
    clients.push(client);
    const ack = await client.request({ type: 'auth', token: await token(sub, claims), ...extra });
    expect(ack.type, JSON.stringify(ack)).to.equal('ack');
    return client;
  };
  const seqOf = async (channel) => (await result(gw, 'history', { channel })).seq;

  before(async () => {
    const file = configFile(NAMESPACES);
    gw = await startGateway([
      '--config', file, '--auth', 'jwt', '--jwt-secret', SECRET, '--api-key', API_KEY, '--balance', 'even', '--max-payload', String(MAX_PAYLOAD)
    ]);
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.close?.();
  });
  after(() => gw?.stop());

  it('keeps each namespace its own history size, side by side, and refuses an unknown namespace', async () => {
    for (let i = 1; i <= 5; i++) {
      await result(gw, 'publish', { channel: 'chat:sizes', data: i });
      await result(gw, 'publish', { channel: 'sizes', data: i });
      await result(gw, 'publish', { channel: 'inbox:sizes', data: i });
    }
    expect((await result(gw, 'history', { channel: 'chat:sizes' })).messages.map((m) => m.data)).to.deep.equal([1, 2, 3, 4, 5]);
    expect((await result(gw, 'history', { channel: 'sizes' })).messages.map((m) => m.data)).to.deep.equal([3, 4, 5]);
    const client = await authed('u1');
    expect(await client.request({ type: 'subscribe', channel: 'sizes', since: { seq: 1, epoch: (await result(gw, 'history', { channel: 'sizes' })).epoch } })).to.include({ recovered: false });
    expect(await client.subscribe('nope:1')).to.include({ type: 'error', code: 'invalid_channel' });
    expect(await client.publish('nope:1', 1)).to.include({ type: 'error', code: 'invalid_channel' });
    expect((await api(gw, 'publish', { channel: 'nope:1', data: 1 })).body.error.code).to.equal('invalid_channel');
    const sse = new SseReader(`${gw.http}/sse?channels=nope:1&token=${await token('u1')}`);
    expect((await sse.response).status).to.equal(400);
  });

  it('latest: a subscribe (WebSocket, SSE, the client library once) is followed by the latest message; clientPublish false is forbidden', async () => {
    await result(gw, 'publish', { channel: 'prices:ACME', data: { p: 1 } });
    const last = await result(gw, 'publish', { channel: 'prices:ACME', data: { p: 2 } });
    const raw = await authed('u2');
    expect(await raw.subscribe('prices:ACME')).to.include({ seq: last.seq, epoch: last.epoch, latest: true });
    const msg = await raw.next((f) => f.type === 'message');
    expect(msg).to.deep.equal({ type: 'message', channel: 'prices:ACME', seq: last.seq, data: { p: 2 } });
    // A second subscriber on the worker that already receives the channel still gets it.
    const again = await authed('u2');
    expect(await again.subscribe('prices:ACME')).to.include({ latest: true });
    await again.next((f) => f.type === 'message' && f.seq === last.seq);
    expect(await raw.publish('prices:ACME', { p: 0 })).to.include({ type: 'error', code: 'forbidden' });
    expect(await raw.subscribe('prices:EMPTY')).to.not.have.property('latest');

    const sse = await SseReader.open(`${gw.http}/sse?channels=prices:ACME&token=${await token('u2')}`);
    await eventually(() => sse.events.some((e) => e.event === 'ready'), { what: 'ready' });
    expect(sse.messages()).to.deep.equal([{ channel: 'prices:ACME', seq: last.seq, data: { p: 2 } }]);
    sse.close();

    for (const transport of ['websocket', 'sse']) {
      const got = [];
      const client = nodeClient(gw.url, { token: await token('u3'), transport, EventSource: (await import('eventsource')).EventSource });
      clients.push(client);
      await client.subscribe('prices:ACME', (data, { seq }) => got.push([seq, data.p]));
      await eventually(() => got.length === 1, { what: `${transport}: the latest message` });
      const next = await result(gw, 'publish', { channel: 'prices:ACME', data: { p: 3 } });
      await eventually(() => got.length === 2, { what: `${transport}: the next one` });
      expect(got, transport).to.deep.equal([[last.seq, 2], [next.seq, 3]]);
      await result(gw, 'publish', { channel: 'prices:ACME', data: { p: 2 } }); // as it was for the next transport
      await eventually(() => got.length === 3);
      last.seq = got[2][0];
    }
  });

  it('publish: idempotencyKey answers the first result, versions arriving out of order never go backwards', async () => {
    const first = await result(gw, 'publish', { channel: 'chat:idem', data: 'once', idempotencyKey: 'k-1' });
    const [again, other] = await Promise.all([
      result(gw, 'publish', { channel: 'chat:idem', data: 'twice', idempotencyKey: 'k-1' }),
      result(gw, 'publish', { channel: 'chat:idem', data: 'other', idempotencyKey: 'k-2' })
    ]);
    expect(again).to.deep.equal({ skipped: 'duplicate', seq: first.seq, epoch: first.epoch });
    expect(other.seq).to.equal(first.seq + 1);
    const answers = [];
    for (const version of [3, 1, 2, 5, 4, 5, 6]) answers.push((await result(gw, 'publish', { channel: 'prices:V', data: version, version })).skipped ?? 'ok');
    expect(answers).to.deep.equal(['ok', 'stale', 'stale', 'ok', 'stale', 'stale', 'ok']);
    expect((await result(gw, 'history', { channel: 'prices:V' })).messages.map((m) => m.data)).to.deep.equal([6]);
    expect(await gw.metric('gateway_publishes_skipped_total', '{reason="stale"}')).to.equal(4);
    expect(await gw.metric('gateway_publishes_skipped_total', '{reason="duplicate"}')).to.equal(1);
  });

  it('answers every bad input with a clear code, publishes nothing and stays up', async () => {
    const before = await seqOf('chat:bad');
    const cases = [
      ['publish', { channel: 'chat:bad', data: 1, idempotencyKey: 'k'.repeat(65) }, 400, 'bad_request'],
      ['publish', { channel: 'chat:bad', data: 1, idempotencyKey: 7 }, 400, 'bad_request'],
      ['publish', { channel: 'chat:bad', data: 1, version: 0 }, 400, 'bad_request'],
      ['publish', { channel: 'chat:bad', data: 1, version: -1 }, 400, 'bad_request'],
      ['publish', { channel: 'chat:bad', data: 1, version: 1.5 }, 400, 'bad_request'],
      ['publish', { channel: 'chat:bad', data: 1, version: 2 ** 53 }, 400, 'bad_request'],
      ['publish', { channel: 'chat:bad', data: 1, extra: true }, 400, 'bad_request'],
      ['publish', { channel: 'chat:bad' }, 400, 'bad_request'],
      ['broadcast', { channels: [], data: 1 }, 400, 'bad_request'],
      ['broadcast', { channels: Array.from({ length: 1001 }, (_, i) => `chat:b${i}`), data: 1 }, 400, 'bad_request'],
      ['broadcast', { channels: ['chat:bad', 'chat:bad'], data: 1 }, 400, 'bad_request'],
      ['batch', { commands: Array.from({ length: 101 }, () => ({ method: 'publish', params: { channel: 'chat:bad', data: 1 } })) }, 400, 'bad_request'],
      ['batch', { commands: [{ method: 'publish', params: { channel: 'chat:bad', data: 1 } }, { method: 'batch', params: { commands: [] } }] }, 400, 'bad_request'],
      ['batch', { commands: [{ method: 'publish', params: { channel: 'chat:bad', data: 1 } }, { method: 'nope' }] }, 400, 'bad_request'],
      ['history', { channel: 'chat:bad', limit: 0 }, 400, 'bad_request'],
      ['history', { channel: 'chat:bad', limit: -1 }, 400, 'bad_request'],
      ['history', { channel: 'chat:bad', limit: 201 }, 400, 'bad_request'],
      ['history', { channel: 'chat:bad', since: { seq: 0, epoch: 'zzzz' } }, 400, 'epoch_changed'],
      ['disconnect', { user: 'x', code: 1000 }, 400, 'bad_request'],
      ['presence', { channel: 'prices:bad' }, 400, 'bad_request'], // no presence in that namespace
      ['presence_stats', { channel: 'prices:bad' }, 400, 'bad_request'],
      ['presence', { channel: 'chat:bad', user: 'x' }, 400, 'bad_request'],
      ['nope', {}, 404, 'not_found']
    ];
    for (const [method, params, status, code] of cases) {
      const answer = await api(gw, method, params);
      expect(answer.status, `${method} ${JSON.stringify(params).slice(0, 80)}`).to.equal(status);
      expect(answer.body.error.code).to.equal(code);
      expect(answer.body.error.message).to.be.a('string').and.not.empty;
    }
    const huge = await fetch(`${gw.http}/api/publish`, { method: 'POST', headers: { Authorization: `Bearer ${API_KEY}` }, body: 'x'.repeat(10 * 2 ** 20) }).catch((err) => err);
    expect(huge.status ?? huge.cause?.code, 'a 10 MB body').to.be.oneOf([413, 'EPIPE', 'ECONNRESET']);
    expect((await api(gw, 'publish', { channel: 'chat:bad', data: 1 }, { body: '{"channel":' })).body.error.code).to.equal('bad_request');
    const noKey = await fetch(`${gw.http}/api/info`, { method: 'POST', body: '{}' });
    expect(noKey.status).to.equal(401);
    expect(await seqOf('chat:bad')).to.equal(before);
    expect(await gw.metric('gateway_api_requests_total', '{method="publish",code="bad_request"}')).to.be.at.least(8);
    expect(await gw.metric('gateway_workers')).to.equal(2);
  });

  it('broadcast sequences each channel on its own; one bad channel does not stop the others', async () => {
    const channels = ['chat:b1', 'chat:b2', 'bad name', 'nope:b', 'chat:b3'];
    const { results } = await result(gw, 'broadcast', { channels, data: { hi: 1 }, idempotencyKey: 'b-1' });
    expect(results.map((r) => r.channel)).to.deep.equal(channels);
    expect(results.filter((r) => r.seq === 1).map((r) => r.channel)).to.deep.equal(['chat:b1', 'chat:b2', 'chat:b3']);
    expect(results[2].error.code).to.equal('invalid_channel');
    expect(results[3].error.code).to.equal('invalid_channel');
    const again = await result(gw, 'broadcast', { channels: ['chat:b1', 'chat:b4'], data: { hi: 2 }, idempotencyKey: 'b-1' });
    expect(again.results.map((r) => r.skipped ?? r.seq)).to.deep.equal(['duplicate', 1]);
  });

  it('history, channels, info and batch', async () => {
    for (let i = 1; i <= 4; i++) await result(gw, 'publish', { channel: 'chat:h', data: i });
    const all = await result(gw, 'history', { channel: 'chat:h' });
    expect(all.messages).to.deep.equal([1, 2, 3, 4].map((n) => ({ seq: n, data: n })));
    expect((await result(gw, 'history', { channel: 'chat:h', limit: 2 })).messages.map((m) => m.seq)).to.deep.equal([3, 4]);
    expect((await result(gw, 'history', { channel: 'chat:h', limit: 2, reverse: true })).messages.map((m) => m.seq)).to.deep.equal([4, 3]);
    expect((await result(gw, 'history', { channel: 'chat:h', since: { seq: 1, epoch: all.epoch }, limit: 2 })).messages.map((m) => m.seq)).to.deep.equal([2, 3]);
    for (let i = 0; i < 4; i++) await result(gw, 'publish', { channel: 'h', data: i });
    const top = await result(gw, 'history', { channel: 'h' });
    expect((await api(gw, 'history', { channel: 'h', since: { seq: 0, epoch: top.epoch } })).body.error.code).to.equal('too_old');

    const a = await authed('u4');
    const b = await authed('u4');
    await a.subscribe('chat:room');
    await b.subscribe('chat:room');
    await b.subscribe('chat:other');
    expect(await result(gw, 'channels', { prefix: 'chat:room' })).to.deep.equal({ channels: { 'chat:room': { subscribers: 2 } } });
    const { nodes } = await result(gw, 'info');
    expect(nodes).to.have.length(1);
    expect(nodes[0]).to.include({ workers: 2 }).and.have.keys('name', 'workers', 'connections', 'subscriptions', 'uptimeS');
    await eventually(async () => (await result(gw, 'info')).nodes[0].connections.ws >= 2, { what: 'connections in info' });

    const { replies } = await result(gw, 'batch', {
      commands: [
        { method: 'publish', params: { channel: 'chat:batch', data: 1 } },
        { method: 'publish', params: { channel: 'nope:batch', data: 2 } },
        { method: 'publish', params: { channel: 'chat:batch', data: 3 } },
        { method: 'history', params: { channel: 'chat:batch' } }
      ]
    });
    expect(replies[0].result.seq).to.equal(1);
    expect(replies[1].error.code).to.equal('invalid_channel');
    expect(replies[2].result.seq).to.equal(2);
    expect(replies[3].result.messages.map((m) => m.data)).to.deep.equal([1, 3]);
  });

  it('subscribe and unsubscribe a user on every worker; disconnect with a code', async () => {
    const first = await authed('u5');
    let second;
    for (let i = 0; i < 6 && (second === undefined || second.welcome.worker === first.welcome.worker); i++) second = await authed('u5');
    expect(second.welcome.worker, 'connections on two workers').to.not.equal(first.welcome.worker);
    const bystander = await authed('u6');
    const n = clients.filter((c) => c !== bystander).length;
    expect(await result(gw, 'subscribe', { user: 'u5', channel: 'inbox:u5' })).to.deep.equal({ subscribed: n });
    for (const client of [first, second]) expect(await client.next((f) => f.type === 'subscribed')).to.include({ channel: 'inbox:u5', seq: 0 });
    const { seq } = await result(gw, 'publish', { channel: 'inbox:u5', data: 'hello' });
    for (const client of [first, second]) await client.next((f) => f.type === 'message' && f.seq === seq);
    expect(await result(gw, 'unsubscribe', { user: 'u5', channel: 'inbox:u5' })).to.deep.equal({ unsubscribed: n });
    await first.next((f) => f.type === 'unsubscribed' && f.channel === 'inbox:u5');
    expect(bystander.frames.some((f) => f.type === 'subscribed' || f.channel === 'inbox:u5')).to.equal(false);
    expect(await result(gw, 'disconnect', { user: 'u5', code: 4321, reason: 'bye' })).to.deep.equal({ disconnected: n });
    expect(await first.closed).to.deep.equal({ code: 4321, reason: 'bye' });
  });

  it('the token\'s channels: subscribed at auth, recovered after a reconnect from the auth frame\'s since', async () => {
    const claims = { channels: ['inbox:u7'] };
    const client = await authed('u7', claims);
    const subscribed = await client.next((f) => f.type === 'subscribed');
    expect(subscribed).to.include({ channel: 'inbox:u7', seq: 0 });
    await result(gw, 'publish', { channel: 'inbox:u7', data: 1 });
    await client.next((f) => f.type === 'message');
    client.close();
    await result(gw, 'publish', { channel: 'inbox:u7', data: 2 });
    await result(gw, 'publish', { channel: 'inbox:u7', data: 3 });
    // Back with where it stood: the claim's channel and one the API had added (allowed by the token), one not allowed.
    const since = { 'inbox:u7': { seq: 1, epoch: subscribed.epoch }, 'chat:api': { seq: 0, epoch: subscribed.epoch }, 'secret:x': { seq: 0, epoch: 'a' } };
    const back = await authed('u7', { ...claims, subscribe: ['chat:*'] }, { since });
    expect(await back.next((f) => f.type === 'subscribed' && f.channel === 'inbox:u7')).to.include({ seq: 3, recovered: true });
    await eventually(() => back.messages('inbox:u7').length === 2, { what: 'the replay' });
    expect(back.messages('inbox:u7').map((m) => m.data)).to.deep.equal([2, 3]);
    expect(await back.next((f) => f.type === 'subscribed' && f.channel === 'chat:api')).to.include({ recovered: false });
    expect(await back.next((f) => f.type === 'unsubscribed')).to.deep.equal({ type: 'unsubscribed', channel: 'secret:x' });

    // The client library does it by itself, and hands each message over once.
    const got = [];
    const events = [];
    const lib = nodeClient(gw.url, { token: await token('u8', { channels: ['inbox:u8'] }) });
    clients.push(lib);
    lib.on('message', (data, { channel }) => got.push([channel, data]));
    lib.on('subscribed', (info) => events.push(info));
    lib.on('gap', (info) => events.push({ gap: info }));
    await whenOpen(lib);
    await eventually(() => events.length === 1, { what: 'subscribed event' });
    await result(gw, 'publish', { channel: 'inbox:u8', data: 'a' });
    await eventually(() => got.length === 1, { what: 'first message' });
    await result(gw, 'disconnect', { user: 'u8', code: 4000 }); // a code the client comes back from
    await result(gw, 'publish', { channel: 'inbox:u8', data: 'b' });
    await eventually(() => got.length === 2 && events.length === 2, { what: 'the missed message, after the reconnect' });
    await result(gw, 'publish', { channel: 'inbox:u8', data: 'c' });
    await eventually(() => got.length === 3, { what: 'a live message' });
    expect(got).to.deep.equal([['inbox:u8', 'a'], ['inbox:u8', 'b'], ['inbox:u8', 'c']]);
    expect(events.some((e) => e.gap)).to.equal(false);
  });
});
