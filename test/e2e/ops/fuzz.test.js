// Hostile input on every way in, generated (fast-check, a fixed seed, a
// bounded count of inputs per way in), against one real gateway (2 workers,
// native, Pusher and Ably, the keyed routes and the admin page on) over real
// sockets. The property: every input gets an answer of the family (an error
// frame or an HTTP status with a code of lib/core/errors.js; Ably's ErrorInfo
// on its way in; or a success), no
// worker or primary is started again or logs at level error or above, and a
// bystander connection on each worker still round-trips after each batch.
// FUZZ_RUNS=<multiplier> and FUZZ_SEED=<n> widen a hunt; a failing input
// found that way belongs in the fixed cases at the end.
import { expect } from 'chai';
import WebSocket from 'ws';
import { decode, encode } from '@msgpack/msgpack';
import { startGateway } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';
import { configFile } from '../../helpers/api.js';
import { APP, RawPusher, channelAuth, eventually, signedQuery } from '../../helpers/pusher.js';
import {
  CLOSE_CODES,
  SCALE,
  WIRE_CODES,
  bodyJson,
  channelName,
  check,
  fc,
  field,
  hostileMsgpack,
  hostileString,
  hostileValue,
  goodChannel,
  jsonText,
  mutate,
  mutation,
  nearly,
  objectText,
  objectValue,
  oddHeaders,
  pathSegment,
  plainText,
  queryOf,
  quoted,
  rawHttp
} from '../../helpers/fuzz.js';

const API_KEY = 'fuzz-api-key';
// Presence with joins and leaves, history with deltas and the latest message: the paths behind a valid name.
const NAMESPACES = [
  { name: 'room', presence: true, joinLeave: true },
  { name: 'hist', historySize: 20, latest: true, delta: true }
];
const ADMIN_PASSWORD = 'fuzz-admin-password';
// Every HTTP status the family answers with (lib/core/errors.js), and the admin page's redirect.
const STATUSES = new Set([200, 202, 303, 400, 401, 403, 404, 405, 413, 429, 431, 503]);
const tally = {};

describe('hostile input kills nothing (property-based)', function () {
  this.timeout(120000 * Math.max(1, SCALE)); // a wider hunt takes longer
  let gw;
  let bystanders;
  let cookie; // the admin page's session

  before(async () => {
    gw = await startGateway(
      [
        ...['--pusher-app-id', APP.appId, '--pusher-key', APP.key, '--pusher-secret', APP.secret, '--pusher-client-events', '--api-key', API_KEY],
        ...['--balance', 'even', '--trust-forwarded', '--max-conns-per-ip', '100000', '--config', configFile({ namespaces: NAMESPACES })]
      ],
      { env: { GATEWAY_ADMIN_PASSWORD: ADMIN_PASSWORD } }
    );
    bystanders = await openBystanders(gw);
    // Logged in before any wrong password locks this address out.
    const login = await rawHttp(gw.metricsPort, { method: 'POST', path: '/admin/login', headers: [['Origin', `http://127.0.0.1:${gw.metricsPort}`]], body: `password=${ADMIN_PASSWORD}` });
    expect(login.status).to.equal(303);
    cookie = /set-cookie: ([^;]+)/i.exec(login.head)[1];
  });
  after(async () => {
    for (const b of [...(bystanders?.native ?? []), ...(bystanders?.pusher ?? [])]) b.close();
    await gw?.stop();
    console.log(`    inputs per way in: ${JSON.stringify(tally)}`);
  });
  afterEach(async function () {
    if (this.currentTest.state === 'passed') await nothingDied();
  });

  /** No process started again or logged an error, and each worker's bystanders still round-trip. */
  async function nothingDied() {
    expect(gw.logs.filter((l) => l.level >= 50), 'log lines at error or above').to.deep.equal([]);
    expect(gw.proc.exitCode, 'the primary runs').to.equal(null);
    const ready = gw.logs.filter((l) => l.msg === 'worker ready').map((l) => l.worker);
    expect(ready.sort(), 'each worker slot started once').to.deep.equal([1, 2]);
    for (const client of bystanders.native) {
      const marker = `m${Math.random()}`;
      await client.publish(client.channel, { marker });
      await client.next((f) => f.type === 'message' && f.data?.marker === marker);
    }
    for (const raw of bystanders.pusher) {
      const pongs = raw.frames.filter((f) => f.event === 'pusher:pong').length;
      raw.send({ event: 'pusher:ping', data: {} });
      await eventually(() => raw.frames.filter((f) => f.event === 'pusher:pong').length > pongs, { what: 'a Pusher bystander pong' });
    }
  }

  /** Counts an input of `way` by its answer: an HTTP status, 'answered' or 'closed <code>'. */
  const counted = (way, answer) => {
    const byAnswer = (tally[way] ??= {});
    byAnswer[answer] = (byAnswer[answer] ?? 0) + 1;
  };

  describe('native WebSocket frames', () => {
    const frameFields = {
      type: field(...['ping', 'auth', 'subscribe', 'unsubscribe', 'presence', 'presence_stats', 'publish'].map((t) => JSON.stringify(t))),
      id: field('1', '"a"', '-0', '1e400'),
      channel: fc.oneof({ arbitrary: quoted(channelName), weight: 3 }, jsonText),
      data: jsonText,
      token: fc.oneof(quoted(hostileString), jsonText),
      since: objectText({ seq: field('0', '1', '9007199254740993', '-1', '1e400'), epoch: fc.oneof(fc.constant('"abc"'), quoted(hostileString), jsonText) }),
      delta: field('"fossil"')
    };

    it('JSON: every text frame is answered with frames of the protocol, the connection kept or closed with a family code', async () => {
      const probe = new NativeProbe(gw, 'json');
      try {
        await check(
          fc.oneof({ arbitrary: objectText(frameFields).map((text) => ({ text })), weight: 9 }, fc.uint8Array({ maxLength: 32 }).map((bytes) => ({ bytes, binary: true }))),
          1000,
          async (input) => {
            counted('native JSON frame', await probe.round(input.text ?? Buffer.from(input.bytes), input.binary === true));
          }
        );
        // Bytes that are not UTF-8 in a text frame: ws answers 1007 itself.
        expect(await probe.round(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), false)).to.equal('closed 1007');
      } finally {
        probe.close();
      }
    });

    it('MessagePack: every binary frame is answered likewise', async () => {
      const probe = new NativeProbe(gw, 'msgpack');
      const frame = objectValue({
        type: fc.oneof(fc.constantFrom('ping', 'auth', 'subscribe', 'unsubscribe', 'presence', 'presence_stats', 'publish'), hostileValue),
        id: hostileValue,
        channel: fc.oneof(channelName, hostileValue),
        data: hostileValue,
        token: hostileValue,
        since: fc.oneof(objectValue({ seq: hostileValue, epoch: hostileValue }), hostileValue),
        delta: hostileValue
      });
      try {
        await check(
          fc.oneof({ arbitrary: frame.map((value) => encode(value)), weight: 5 }, { arbitrary: hostileMsgpack, weight: 4 }, fc.string({ maxLength: 20 }).map((text) => ({ text }))),
          800,
          async (input) => {
            counted('native MessagePack frame', input.text !== undefined ? await probe.round(input.text, false) : await probe.round(Buffer.from(input), true));
          }
        );
      } finally {
        probe.close();
      }
    });

    it('the upgrade: hostile paths, queries and headers are answered 101 or with a family status', async () => {
      await check(
        fc.record({ path: fc.oneof(fc.constant('/'), fc.constant('/app/key-1'), pathSegment.map((s) => `/${s}`)), query: queryOf(['protocol', 'token', 'encoding']), headers: oddHeaders, version: fc.constantFrom('13', '8', '', 'x') }),
        300,
        async ({ path, query, headers, version }) => {
          const answer = await rawHttp(gw.port, {
            path: `${path}?${query}`,
            headers: [['Upgrade', 'websocket'], ['Connection', 'Upgrade'], ['Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ=='], ['Sec-WebSocket-Version', version], ...headers]
          });
          expectHttp(answer, 'upgrade', [101]);
          counted('upgrade', answer.status);
        }
      );
    });
  });

  describe('SSE', () => {
    it('GET /sse: hostile channel lists, tokens and Last-Event-ID are answered 200 or with a family error', async () => {
      const list = fc.oneof(
        fc.uniqueArray(goodChannel, { minLength: 1, maxLength: 3 }).map((names) => names.join(',')),
        fc.array(fc.oneof({ arbitrary: channelName.map(encodeURIComponentSafe), weight: 4 }, pathSegment), { maxLength: 4 }).map((names) => names.join(','))
      );
      const cursor = fc.oneof(fc.constantFrom('', ',', '1.a', '1.a,2.b', '99999999999999999.a', '-1.a', '1.A', '.', '1.'), hostileString);
      await check(
        fc.record({ list, query: queryOf(['token', 'lastEventId']), cursor: fc.option(cursor, { freq: 2 }), headers: oddHeaders, method: fc.constantFrom('GET', 'GET', 'POST', 'HEAD') }),
        500,
        async ({ list, query, cursor, headers, method }) => {
          const answer = await rawHttp(gw.port, { method, path: `/sse?channels=${list}&${query}`, headers: cursor === null ? headers : [['Last-Event-ID', cursor], ...headers] });
          expectHttp(answer, 'json');
          counted('GET /sse', answer.status);
        }
      );
    });
  });

  describe('keyed HTTP routes', () => {
    const auth = fc.oneof(fc.constant(`Bearer ${API_KEY}`), fc.constant(`Bearer ${API_KEY}`), nearly(API_KEY).map((s) => `Bearer ${s}`), hostileString);
    const wellFormed = fc.oneof(
      fc.record({ channel: goodChannel, data: plainText }).map(({ channel, data }) => `{"channel":${JSON.stringify(channel)},"data":${data}}`),
      fc.string({ minLength: 1, maxLength: 10 }).map((user) => JSON.stringify({ user }))
    );
    const publishBody = objectText({ channel: fc.oneof({ arbitrary: quoted(channelName), weight: 3 }, jsonText), data: jsonText, idempotencyKey: jsonText, version: field('1', '9007199254740993') });
    const disconnectBody = objectText({ user: fc.oneof(quoted(hostileString), jsonText), code: field('4000', '4999', '1000'), reason: jsonText });

    it('POST /publish and POST /disconnect', async () => {
      await check(
        fc.record({
          route: fc.constantFrom('/publish', '/disconnect'),
          method: fc.constantFrom('POST', 'POST', 'POST', 'GET', 'PUT'),
          auth: fc.option(auth),
          body: fc.oneof(wellFormed, publishBody, disconnectBody),
          headers: oddHeaders
        }),
        600,
        async ({ route, method, auth, body, headers }) => {
                    const answer = await rawHttp(gw.port, { method, path: route, headers: auth === null ? headers : [['Authorization', auth], ...headers], body });
          expectHttp(answer, 'json', route === '/publish' ? [202] : [200]);
          counted(`POST ${route}`, answer.status);
        }
      );
    });

    it('POST /api/<method>: every method, and names that are not methods', async () => {
      const channel = fc.oneof({ arbitrary: quoted(channelName), weight: 3 }, jsonText);
      const params = fc.oneof(
        fc.record({ channel: goodChannel, data: plainText }).map(({ channel, data }) => `{"channel":${JSON.stringify(channel)},"data":${data}}`),
        fc.record({ channel: goodChannel, limit: fc.integer({ min: 1, max: 20 }), reverse: fc.boolean() }).map((p) => JSON.stringify(p)),
        fc.uniqueArray(goodChannel, { minLength: 1, maxLength: 3 }).map((channels) => JSON.stringify({ channels, data: { a: 1 } })),
        fc.constantFrom('{}', '{"prefix":"hist"}', '{"channel":"room:a"}', '{"commands":[{"method":"channels"},{"method":"publish","params":{"channel":"fuzz","data":1}}]}'),
        objectText({ channel, data: jsonText, idempotencyKey: jsonText, version: jsonText, channels: fc.array(channel, { maxLength: 3 }).map((c) => `[${c.join(',')}]`) }),
        objectText({ user: jsonText, channel, code: jsonText, reason: jsonText }),
        objectText({ channel, since: objectText({ seq: jsonText, epoch: jsonText }), limit: field('1', '0', '1e400', '100000'), reverse: jsonText }),
        objectText({ prefix: fc.oneof(quoted(hostileString), jsonText) }),
        objectText({ commands: fc.array(objectText({ method: field('"publish"', '"batch"', '"channels"', '"__proto__"'), params: jsonText }), { maxLength: 3 }).map((c) => `[${c.join(',')}]`) })
      );
      const method = fc.oneof(
        { arbitrary: fc.constantFrom('publish', 'broadcast', 'subscribe', 'unsubscribe', 'disconnect', 'presence', 'presence_stats', 'history', 'channels', 'info', 'batch'), weight: 4 },
        pathSegment
      );
      await check(fc.record({ method, params, auth: fc.option(auth, { freq: 8 }), verb: fc.constantFrom('POST', 'POST', 'POST', 'GET'), headers: oddHeaders }), 800, async ({ method, params, auth, verb, headers }) => {
        const answer = await rawHttp(gw.port, { method: verb, path: `/api/${method}`, headers: auth === null ? headers : [['Authorization', auth], ...headers], body: params });
        expectHttp(answer, 'api');
          counted('POST /api/<method>', answer.status);
      });
    });

    it('any other path and method', async () => {
      await check(
        fc.record({ method: fc.oneof(fc.constantFrom('GET', 'HEAD', 'POST', 'OPTIONS', 'DELETE', 'PATCH', 'CONNECT', 'TRACE'), fc.string({ unit: 'binary-ascii', maxLength: 8 })), path: fc.oneof(pathSegment.map((s) => `/${s}`), hostileString.map((s) => `/${s}`), fc.constantFrom('/health', '/client.js', '/client/x.js', '/vendor/../../etc/passwd', '*', '//', '/apps', '/app/')), headers: oddHeaders }),
        400,
        async ({ method, path, headers }) => {
          const answer = await rawHttp(gw.port, { method, path, headers });
          expectHttp(answer, 'any');
          counted('other paths', answer.status);
        }
      );
    });
  });

  describe('Pusher WebSocket frames', () => {
    it('every pusher: event and client events, signed and not, are answered with Pusher frames', async () => {
      const probe = new PusherProbe(gw);
      const userData = objectText({ id: fc.oneof(quoted(hostileString), jsonText, fc.constant('"u1"')), user_info: jsonText });
      const channelData = objectText({ user_id: fc.oneof(quoted(hostileString), jsonText, fc.constant('"u1"')), user_info: jsonText });
      const input = fc.record({
        event: fc.oneof({ arbitrary: fc.constantFrom('pusher:ping', 'pusher:pong', 'pusher:subscribe', 'pusher:unsubscribe', 'pusher:signin', 'client-x', 'client-__proto__'), weight: 5 }, hostileString),
        channel: channelName,
        channelData: fc.oneof(channelData, jsonText),
        userData: fc.oneof(userData, jsonText),
        sign: fc.constantFrom('signed', 'near', 'near key', 'none'),
        near: mutation,
        auth: fc.oneof(quoted(hostileString), jsonText),
        dataAs: fc.constantFrom('object', 'string', 'raw'),
        raw: jsonText,
        frameChannel: fc.option(fc.oneof(quoted(channelName), jsonText))
      });
      try {
        await check(fc.oneof({ arbitrary: input, weight: 9 }, fc.string({ maxLength: 40 }).map((text) => ({ text }))), 1000, async (frame) => {
          counted('Pusher frame', await probe.round(frame.text ?? pusherFrame(frame, await probe.socketId())));
        });
      } finally {
        probe.close();
      }
    });
  });

  describe("Pusher's HTTP API", () => {
    const eventBody = objectText({
      name: field('"ev"', '"pusher:x"', '"client-x"'),
      data: field('"{}"', '"x"'),
      channel: fc.oneof({ arbitrary: quoted(channelName), weight: 3 }, jsonText),
      channels: fc.array(fc.oneof(quoted(channelName), jsonText), { maxLength: 3 }).map((c) => `[${c.join(',')}]`),
      socket_id: field('"1.1"', '"1.x"'),
      info: field('"user_count"', '"subscription_count"', '"user_count,subscription_count"', '"cache"')
    });
    const goodEvent = fc
      .record({ name: fc.constantFrom('ev', 'client-like', '__proto__'), data: plainText, channel: fc.constantFrom('fuzz', 'presence-fuzz', 'cache-fuzz', '__proto__'), info: fc.constantFrom(undefined, 'subscription_count', 'user_count') })
      .map((event) => JSON.stringify(event));
    const batchBody = objectText({ batch: fc.array(eventBody, { maxLength: 3 }).map((b) => `[${b.join(',')}]`) });
    const route = fc.oneof(
      fc.constant(['POST', 'events']),
      fc.constant(['POST', 'batch_events']),
      fc.constant(['GET', 'channels']),
      channelName.map((c) => ['GET', `channels/${encodeURIComponentSafe(c)}`]),
      pathSegment.map((s) => ['GET', `channels/${s}`]),
      pathSegment.map((s) => ['GET', `channels/${s}/users`]),
      channelName.map((c) => ['GET', `channels/${encodeURIComponentSafe(c)}/users`]),
      pathSegment.map((s) => ['POST', `users/${s}/terminate_connections`]),
      fc.tuple(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE'), pathSegment)
    );

    it('paths, percent-encoding, queries, signatures and bodies: answered 200 or with a family status', async () => {
      await check(
        fc.record({
          app: fc.oneof({ arbitrary: fc.constant(APP.appId), weight: 4 }, pathSegment),
          route,
          sign: fc.constantFrom(true, true, false),
          spoil: fc.oneof({ arbitrary: fc.constant(null), weight: 2 }, fc.tuple(fc.constantFrom('auth_key', 'body_md5', 'auth_signature', 'auth_timestamp', 'auth_version'), mutation)),
          query: queryOf(['auth_key', 'auth_timestamp', 'auth_version', 'auth_signature', 'body_md5', 'info', 'filter_by_prefix']),
          params: fc.oneof(fc.constant({}), fc.dictionary(fc.constantFrom('info', 'filter_by_prefix', '__proto__', 'auth_version'), fc.oneof(fc.constantFrom('user_count', 'subscription_count', 'presence-', 'cache'), hostileString), { maxKeys: 2 })),
          body: fc.option(fc.oneof(goodEvent, goodEvent.map((e) => `{"batch":[${e}]}`), eventBody, batchBody, jsonText), { freq: 6 }),
          headers: oddHeaders
        }),
        1000,
        async ({ app, route: [method, rest], sign, spoil, query, params, body, headers }) => {
          const path = `/apps/${app}/${rest}`;
          const text = method === 'POST' ? (body ?? undefined) : undefined;
          let search = query;
          try {
            if (sign) search = signedQuery(method, path, { body: text, params });
          } catch {} // a lone surrogate cannot be hashed as UTF-8: sent unsigned
          if (sign && spoil !== null) {
            // A near miss of one signed parameter: the signature checks go past their cheap tests.
            const signed = new URLSearchParams(search);
            signed.set(spoil[0], mutate(signed.get(spoil[0]) ?? '', spoil[1]));
            search = String(signed);
          }
          const answer = await rawHttp(gw.port, { method, path: `${path}?${search}`, headers, body: text });
          expectHttp(answer, 'text');
          counted('Pusher HTTP API', answer.status);
        }
      );
    });
  });

  describe('Ably frames and REST', () => {
    const ABLY_KEY = `${APP.appId}.${APP.key}:${APP.secret}`;
    const ablyMessage = objectValue({ name: fc.oneof(fc.constant('ev'), hostileValue), data: hostileValue, encoding: fc.oneof(fc.constant('json'), hostileValue), clientId: hostileValue, id: hostileValue, extras: hostileValue, action: fc.oneof(fc.constant(0), hostileValue) });
    const ablyPresence = objectValue({ action: fc.oneof({ arbitrary: fc.constantFrom(2, 3, 4), weight: 3 }, hostileValue), clientId: fc.oneof({ arbitrary: fc.constantFrom('ann', 'bo#1', 'c:d'), weight: 2 }, hostileValue), data: hostileValue, encoding: hostileValue, id: hostileValue });
    const ablyFrame = objectValue({
      action: fc.oneof({ arbitrary: fc.constantFrom(0, 1, 3, 5, 7, 10, 12, 14, 15, 16, 17, 21, 99), weight: 4 }, hostileValue),
      channel: fc.oneof({ arbitrary: fc.constantFrom('fuzz', 'a:b', '[?rewind=1]x', '__proto__'), weight: 2 }, channelName, hostileValue),
      msgSerial: fc.oneof(fc.nat({ max: 5 }), hostileValue),
      messages: fc.oneof({ arbitrary: fc.array(ablyMessage, { maxLength: 3 }), weight: 3 }, hostileValue),
      presence: fc.oneof({ arbitrary: fc.array(ablyPresence, { maxLength: 3 }), weight: 3 }, hostileValue),
      id: hostileValue,
      flags: hostileValue,
      params: fc.oneof(objectValue({ rewind: fc.oneof(fc.constantFrom('3', '1m', '0', '101', 'soon'), hostileValue) }), hostileValue),
      channelSerial: fc.oneof(fc.constantFrom('x:1', 'a:b', ':', '0:0'), hostileValue),
      auth: fc.oneof(objectValue({ accessToken: hostileValue }), hostileValue)
    });

    for (const format of ['json', 'msgpack']) {
      it(`${format}: every ProtocolMessage is answered with Ably's, the connection kept or closed after an ERROR`, async () => {
        const probe = new AblyProbe(gw, format, ABLY_KEY);
        try {
          await check(
            fc.oneof({ arbitrary: ablyFrame.map((value) => ({ value })), weight: 8 }, { arbitrary: hostileMsgpack.map((bytes) => ({ bytes })), weight: 1 }, fc.string({ maxLength: 30 }).map((text) => ({ text }))),
            600,
            async (input) => {
              counted(`Ably ${format} frame`, await probe.round(input));
            }
          );
        } finally {
          probe.close();
        }
      });
    }

    it('REST: paths, credentials and bodies are answered with Ably\'s JSON error or a success', async () => {
      const auth = fc.oneof(
        fc.constant(`Basic ${Buffer.from(ABLY_KEY).toString('base64')}`),
        mutation.map((m) => `Basic ${Buffer.from(mutate(ABLY_KEY, m)).toString('base64')}`),
        hostileString.map((t) => `Bearer ${t}`),
        hostileString
      );
      const tokenRequest = objectText({ keyName: field(JSON.stringify(`${APP.appId}.${APP.key}`)), ttl: field('1000', '-1', '1e400'), capability: field('"{\\"*\\":[\\"*\\"]}"', '"{}"', '"[]"'), clientId: field('"a"', '""'), timestamp: field(String(Date.now()), '0'), nonce: field('"abcdefabcdefabcdef"'), mac: field('"x"') });
      const route = fc.oneof(
        fc.constant(['GET', '/time']),
        fc.constant(['POST', `/keys/${APP.appId}.${APP.key}/requestToken`]),
        pathSegment.map((s) => ['POST', `/keys/${s}/requestToken`]),
        channelName.map((c) => ['POST', `/channels/${encodeURIComponentSafe(c)}/messages`]),
        pathSegment.map((s) => ['POST', `/channels/${s}/messages`]),
        fc.tuple(fc.constantFrom('GET', 'POST'), channelName.map((c) => `/channels/${encodeURIComponentSafe(c)}/presence`)),
        fc.tuple(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE'), pathSegment.map((s) => `/channels/${s}`))
      );
      await check(
        fc.record({ route, auth: fc.option(auth), body: fc.option(fc.oneof(tokenRequest, jsonText, fc.array(ablyMessage, { maxLength: 2 }).map((m) => JSON.stringify(m, (k, v) => (typeof v === 'bigint' ? String(v) : v))))), msgpack: fc.boolean(), headers: oddHeaders }),
        600,
        async ({ route: [method, path], auth: authorization, body, msgpack, headers }) => {
          const sent = [...headers];
          if (authorization !== null) sent.push(['Authorization', authorization]);
          if (msgpack) sent.push(['Accept', 'application/x-msgpack']);
          const answer = await rawHttp(gw.port, { method, path, headers: sent, body: method === 'POST' ? (body ?? undefined) : undefined });
          const { status } = answer;
          if (status === 431 || (status === 400 && answer.body === '')) return counted('Ably REST', status); // the HTTP parser's own refusal
          expect([200, 201, 400, 401, 404, 429, 500].includes(status), `status ${status}: ${answer.body.slice(0, 300)}`).to.equal(true);
          if (status >= 400) {
            expect(/content-type: application\/json\r\n/i.test(answer.head), answer.head).to.equal(true);
            expect(Number.isInteger(bodyJson(answer)?.error?.code), answer.body.slice(0, 300)).to.equal(true);
          }
          counted('Ably REST', status);
        }
      );
    });
  });

  describe('the admin page', () => {
    it('login, forms, reads and actions: answered with a page, a redirect or a family status', async () => {
      const origin = fc.oneof(fc.constant('same'), hostileString, fc.constant('null'));
      const body = fc.oneof(
        fc.tuple(fc.oneof(fc.constant('password'), pathSegment), fc.oneof(nearly(ADMIN_PASSWORD).map(encodeURIComponentSafe), pathSegment, hostileString)).map(([k, v]) => `${k}=${v}`),
        objectText({
          channel: fc.oneof({ arbitrary: quoted(channelName), weight: 3 }, jsonText),
          data: jsonText,
          user: jsonText,
          code: jsonText,
          reason: jsonText,
          // A publish to an app's channel, of a protocol (lib/native/admin-calls.js).
          app: fc.oneof({ arbitrary: fc.constant(JSON.stringify(APP.appId)), weight: 3 }, jsonText),
          protocol: fc.oneof({ arbitrary: fc.constantFrom('"pusher"', '"ably"'), weight: 3 }, jsonText),
          event: fc.oneof(quoted(channelName), jsonText)
        }),
        jsonText
      );
      const path = fc.oneof(
        fc.constantFrom('/', '/stats', '/metrics', '/admin', '/admin/', '/admin/login', '/admin/logout', '/admin/admin.js', '/admin/api/publish', '/admin/api/disconnect', '/admin/api/unsubscribe', '/admin/api/__proto__', '/admin/api/constructor'),
        queryOf(['prefix', 'channel', 'limit', 'app', 'protocol']).map((q) => `/admin/api/view?${q}`),
        fc
          .tuple(fc.constantFrom('pusher', 'ably', '__proto__'), queryOf(['prefix', 'channel', 'limit']))
          .map(([protocol, q]) => `/admin/api/view?app=${APP.appId}&protocol=${protocol}&${q}`),
        pathSegment.map((s) => `/admin/api/${s}`),
        pathSegment.map((s) => `/admin/${s}`)
      );
      await check(
        fc.record({ method: fc.constantFrom('GET', 'POST', 'POST', 'PUT'), path, origin, session: fc.oneof(fc.constant('valid'), fc.constant('near'), hostileString, fc.constant(null)), near: mutation, body, headers: oddHeaders }),
        600,
        async ({ method, path, origin, session, near, body, headers }) => {
          const sent = [...headers];
          sent.push(['Origin', origin === 'same' ? `http://127.0.0.1:${gw.metricsPort}` : origin]);
          // Logging out with the suite's own session would end it: a hostile cookie there.
          if (session === 'valid' && !path.startsWith('/admin/logout')) sent.push(['Cookie', cookie]);
          else if (session === 'near') sent.push(['Cookie', mutate(cookie, near)]);
          else if (session !== null) sent.push(['Cookie', `gateway_admin=${session}`]);
          const answer = await rawHttp(gw.metricsPort, { method, path, headers: sent, body: method === 'GET' ? undefined : body });
          expectHttp(answer, 'admin');
          counted('admin page', answer.status);
        }
      );
    });
  });

  // Inputs the properties found, each kept as it was found (on the code
  // before its fix, each killed a worker or went unanswered).
  describe('fixed cases', () => {
    const deep = (n) => `${'['.repeat(n)}${']'.repeat(n)}`;

    it('a native frame whose type is nested 5,000 deep, or an object whose toString is bytes', async () => {
      const json = new NativeProbe(gw, 'json');
      const msgpack = new NativeProbe(gw, 'msgpack');
      try {
        expect(await json.round(`{"type":${deep(5000)}}`, false)).to.equal('answered');
        expect(json.frames.find((f) => f.type === 'error')).to.include({ code: 'bad_request', message: 'unknown type (an array)' });
        expect(await msgpack.round(Buffer.from(encode({ type: { toString: new Uint8Array(4) } })), true)).to.equal('answered');
        expect(msgpack.frames.find((f) => f.type === 'error')).to.include({ code: 'bad_request', message: 'unknown type (an object)' });
      } finally {
        json.close();
        msgpack.close();
      }
    });

    it('a server API batch whose method is nested 5,000 deep', async () => {
      const answer = await rawHttp(gw.port, {
        method: 'POST',
        path: '/api/batch',
        headers: [['Authorization', `Bearer ${API_KEY}`]],
        body: `{"commands":[{"method":${deep(5000)}}]}`
      });
      expect(answer.status).to.equal(400);
      expect(bodyJson(answer).error.message).to.match(/no method \(an array\)/);
    });

    it('an admin action whose data is nested 5,000 deep', async () => {
      const origin = `http://127.0.0.1:${gw.metricsPort}`;
      const answer = await rawHttp(gw.metricsPort, {
        method: 'POST',
        path: '/admin/api/publish',
        headers: [['Origin', origin], ['Cookie', cookie]],
        body: `{"channel":"fuzz","data":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`
      });
      expect(answer.status).to.equal(400);
      expect(bodyJson(answer).error).to.deep.equal({ code: 'bad_request', message: 'data is nested deeper than 64 levels' });
    });

    it('CONNECT, which no route serves', async () => {
      const answer = await rawHttp(gw.port, { method: 'CONNECT', path: '127.0.0.1:80' });
      expect(answer.status).to.equal(405);
      expect(bodyJson(answer).error).to.equal('method_not_allowed');
    });

    it('a Pusher key spelled with a character of two UTF-8 bytes, in a sign-in and in a signed HTTP API request', async () => {
      const near = APP.key.replace('e', 'é'); // as many characters as the key, one byte more
      const probe = new PusherProbe(gw);
      try {
        await probe.socketId();
        const userData = JSON.stringify({ id: 'u1' });
        expect(await probe.round(JSON.stringify({ event: 'pusher:signin', data: { user_data: userData, auth: `${near}:${'0'.repeat(64)}` } }))).to.equal('answered');
        expect(probe.raw.frames.find((f) => f.event === 'pusher:error').data).to.deep.equal({ code: 4009, message: 'invalid signin signature' });
        expect(await probe.round(JSON.stringify({ event: 'pusher:subscribe', data: { channel: 'private-near', auth: `${near}:${'0'.repeat(64)}` } }))).to.equal('answered');
        expect(probe.raw.frames.find((f) => f.event === 'pusher:subscription_error').data.status).to.equal(401);
      } finally {
        probe.close();
      }
      const path = `/apps/${APP.appId}/events`;
      const body = JSON.stringify({ name: 'ev', data: '1', channel: 'a' });
      // Each as many characters as the right one, and one byte more.
      for (const [name, spoil] of [['auth_key', () => near], ['body_md5', (md5) => `é${md5.slice(1)}`]]) {
        const query = new URLSearchParams(signedQuery('POST', path, { body }));
        query.set(name, spoil(query.get(name)));
        const answer = await rawHttp(gw.port, { method: 'POST', path: `${path}?${query}`, body });
        expect(answer.status, name).to.equal(401);
      }
    });
  });
});

// ---- The answers a property accepts ----

/**
 * An HTTP answer of the family: a known status, and for an error a body in
 * its route's shape with a family code.
 * @param {'json'|'api'|'text'|'admin'|'any'} shape
 */
function expectHttp(answer, shape, successes = [200]) {
  const { status } = answer;
  if (status === 101 || status === 431 || (status === 400 && answer.body === '')) return; // the upgrade, or the HTTP parser's own refusal
  expect(STATUSES.has(status) || successes.includes(status), `status ${status}: ${answer.head}\n${answer.body.slice(0, 300)}`).to.equal(true);
  if (status < 400 || shape === 'any' || shape === 'text' || answer.method === 'HEAD') return;
  // ws answers a handshake it cannot complete itself, in plain text.
  if (shape === 'upgrade' && status === 400 && !/content-type: application\/json/i.test(answer.head)) return;
  const body = bodyJson(answer);
  const code = shape === 'api' || shape === 'admin' ? body?.error?.code : body?.error;
  if (shape === 'admin' && body === undefined) return; // the login page: HTML
  expect(WIRE_CODES.has(code), `a family code in ${answer.body.slice(0, 300)}`).to.equal(true);
}

function encodeURIComponentSafe(text) {
  return encodeURIComponent(text.replace(/[\uD800-\uDFFF]/g, '_'));
}

/** A Pusher frame's text from a generated record: `data` an object, its JSON text, or any JSON. */
function pusherFrame({ event, channel, channelData, userData, sign, near, auth, dataAs, raw, frameChannel }, socketId) {
  const data = { channel, channel_data: channelData, user_data: userData };
  if (sign !== 'none') {
    const signed = event === 'pusher:signin' ? `${socketId}::user::${userData}` : channel.startsWith('presence-') ? `${socketId}:${channel}:${channelData}` : `${socketId}:${channel}`;
    const auth = channelAuth(signed);
    const colon = auth.indexOf(':');
    data.auth = sign === 'signed' ? auth : sign === 'near' ? mutate(auth, near) : `${mutate(auth.slice(0, colon), near)}${auth.slice(colon)}`;
  }
  let dataText = dataAs === 'raw' ? raw : JSON.stringify(data);
  if (sign === 'none' && dataAs !== 'raw') dataText = `${dataText.slice(0, -1)},"auth":${auth}}`;
  if (dataAs === 'string') dataText = JSON.stringify(dataText);
  return `{"event":${JSON.stringify(event)}${frameChannel === null ? '' : `,"channel":${frameChannel}`},"data":${dataText}}`;
}

// ---- Connections that send one input, then a marker, and check what came back ----

/**
 * Resolves once `seen()` holds, checked at each frame ({}), or when the
 * connection closes ({code}); rejects when neither happens within 10 s.
 */
function answered(ws, seen) {
  return new Promise((resolve, reject) => {
    const done = (outcome) => {
      clearTimeout(timer);
      ws.off('message', onMessage);
      ws.off('close', onClose);
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const onMessage = () => seen() && done({});
    const onClose = (code) => done({ code });
    const timer = setTimeout(() => done(new Error('neither the marker answered nor the connection closed within 10 s')), 10000);
    ws.on('message', onMessage);
    ws.on('close', onClose);
    if (seen()) done({});
  });
}

/** A native WebSocket: each round sends an input then a ping with a fresh id, and reads to its pong (or a close). */
class NativeProbe {
  constructor(gw, encoding) {
    this.gw = gw;
    this.encoding = encoding;
    this.marker = 0;
  }

  async open() {
    this.frames = [];
    this.ws = await openDecoding(new WebSocket(this.gw.url, this.encoding === 'msgpack' ? ['gateway.msgpack'] : undefined), this.frames);
  }

  async round(payload, binary) {
    if (this.ws === undefined) await this.open();
    const id = `marker-${++this.marker}`;
    const from = this.frames.length;
    this.ws.send(payload, { binary });
    const ping = { type: 'ping', id };
    this.ws.send(this.encoding === 'msgpack' ? encode(ping) : JSON.stringify(ping), { binary: this.encoding === 'msgpack' });
    const outcome = await answered(this.ws, () => this.frames.slice(from).some((f) => f.type === 'pong' && f.id === id));
    for (const frame of this.frames.slice(from)) {
      expect(frame.type, JSON.stringify(frame)).to.be.a('string');
      if (frame.type === 'error') expect(WIRE_CODES.has(frame.code), JSON.stringify(frame)).to.equal(true);
    }
    if (outcome.code === undefined) return 'answered';
    expect(CLOSE_CODES.has(outcome.code), `close code ${outcome.code}`).to.equal(true);
    this.ws = undefined;
    return `closed ${outcome.code}`;
  }

  close() {
    this.ws?.close();
  }
}

/** A Pusher WebSocket, signed into private-fuzz and presence-fuzz so client events reach the core's checks. */
/** Resolves with `ws` once open; every frame it receives, decoded (MessagePack or JSON), goes into `frames`. */
async function openDecoding(ws, frames) {
  ws.on('message', (data, isBinary) => frames.push(isBinary ? decode(data) : JSON.parse(String(data))));
  ws.on('error', () => {});
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return ws;
}

/** One Ably connection (a key, `v=6`) sent one input a round, then a HEARTBEAT whose echo shows it was read. */
class AblyProbe {
  constructor(gw, format, key) {
    this.gw = gw;
    this.format = format;
    this.key = key;
    this.marker = 0;
  }

  async open() {
    this.frames = [];
    const ws = await openDecoding(new WebSocket(`ws://127.0.0.1:${this.gw.port}/?v=6&format=${this.format}&key=${encodeURIComponent(this.key)}`), this.frames);
    await eventually(() => this.frames.some((f) => f.action === 4), { what: 'CONNECTED', interval: 2 });
    this.ws = ws;
  }

  encode(value) {
    return this.format === 'msgpack' ? encode(value, { ignoreUndefined: true }) : JSON.stringify(value, (k, v) => (typeof v === 'bigint' ? String(v) : v));
  }

  async round({ value, bytes, text }) {
    if (this.ws === undefined) await this.open();
    const id = `marker-${++this.marker}`;
    const from = this.frames.length;
    if (value !== undefined) this.ws.send(this.encode(value), { binary: this.format === 'msgpack' });
    else if (bytes !== undefined) this.ws.send(Buffer.from(bytes), { binary: true });
    else this.ws.send(text);
    this.ws.send(this.encode({ action: 0, id }), { binary: this.format === 'msgpack' });
    const outcome = await answered(this.ws, () => this.frames.slice(from).some((f) => f.action === 0 && f.id === id));
    for (const frame of this.frames.slice(from)) {
      expect(frame.action, JSON.stringify(frame)).to.be.a('number');
      if (frame.error !== undefined) expect(Number.isInteger(frame.error.code) && Number.isInteger(frame.error.statusCode), JSON.stringify(frame)).to.equal(true);
    }
    if (outcome.code === undefined) return 'answered';
    // Closed only after an ERROR (or DISCONNECTED, CLOSED) said why, as ably-js reads it, or by ws itself for a
    // broken frame; an earlier round's AUTH may be what ends it (a token is verified asynchronously).
    expect(outcome.code === 1000 || CLOSE_CODES.has(outcome.code), `close code ${outcome.code}`).to.equal(true);
    if (outcome.code === 1000) expect(this.frames.some((f) => f.action === 9 || f.action === 6 || f.action === 8), 'an ERROR before the close').to.equal(true);
    this.ws = undefined;
    return `closed ${outcome.code}`;
  }

  close() {
    this.ws?.close();
  }
}

class PusherProbe {
  constructor(gw) {
    this.gw = gw;
  }

  async socketId() {
    if (this.raw === undefined) {
      this.raw = await RawPusher.open(this.gw);
      this.id = await this.raw.socketId();
      const member = JSON.stringify({ user_id: 'probe' });
      this.raw.send({ event: 'pusher:subscribe', data: { channel: 'private-fuzz', auth: channelAuth(`${this.id}:private-fuzz`) } });
      this.raw.send({ event: 'pusher:subscribe', data: { channel: 'presence-fuzz', auth: channelAuth(`${this.id}:presence-fuzz:${member}`), channel_data: member } });
    }
    return this.id;
  }

  async round(text) {
    await this.socketId();
    const raw = this.raw;
    const from = raw.frames.length;
    const pongs = raw.frames.filter((f) => f.event === 'pusher:pong').length;
    raw.send(text);
    raw.send({ event: 'pusher:ping', data: {} });
    const outcome = await answered(raw.ws, () => raw.frames.filter((f) => f.event === 'pusher:pong').length > pongs);
    for (const frame of raw.frames.slice(from)) {
      expect(frame.event, JSON.stringify(frame)).to.be.a('string');
      if (frame.event === 'pusher:error') expect(frame.data.code === null || (frame.data.code >= 4000 && frame.data.code < 5000), JSON.stringify(frame)).to.equal(true);
      if (frame.event === 'pusher:subscription_error') expect(STATUSES.has(frame.data.status), JSON.stringify(frame)).to.equal(true);
    }
    if (outcome.code === undefined) return 'answered';
    expect(outcome.code === 1000 || CLOSE_CODES.has(outcome.code) || (outcome.code >= 4000 && outcome.code < 5000), `close code ${outcome.code}`).to.equal(true);
    this.raw = undefined;
    return `closed ${outcome.code}`;
  }

  close() {
    this.raw?.close();
  }
}

/** A native and a Pusher client on each worker, each with a channel of its own. */
async function openBystanders(gw) {
  const native = new Map();
  for (let i = 0; i < 20 && native.size < 2; i++) {
    const client = await TestClient.connect(gw.url);
    if (native.has(client.welcome.worker)) {
      client.close();
      continue;
    }
    client.channel = `bystander-${client.welcome.worker}`;
    await client.subscribe(client.channel);
    native.set(client.welcome.worker, client);
  }
  const pusher = new Map();
  for (let i = 0; i < 20 && pusher.size < 2; i++) {
    const raw = await RawPusher.open(gw);
    const worker = (await raw.socketId()).split('.')[0];
    if (pusher.has(worker)) raw.close();
    else pusher.set(worker, raw);
  }
  expect([native.size, pusher.size], 'bystanders on both workers').to.deep.equal([2, 2]);
  return { native: [...native.values()], pusher: [...pusher.values()] };
}
