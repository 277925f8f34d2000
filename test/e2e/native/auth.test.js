// Identity and permissions against the real gateway: tokens in the auth
// frame, refusals of every kind of bad token, channel permissions, refresh,
// the auth timeout and the expiry.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';
import { SECRET, handToken, hmacSign, joseHs256, nowS, rsaKeys, rsaSign } from '../../helpers/tokens.js';
import { sleep } from '../../helpers/wait.js';

/** Connects and authenticates; resolves [client, ack]. */
async function authed(gw, token) {
  const client = await TestClient.connect(gw.url);
  const ack = await client.request({ type: 'auth', token });
  return [client, ack];
}

describe('auth: HMAC tokens', function () {
  let gw;
  let clients = [];
  const track = (c) => (clients.push(c), c);

  before(async () => {
    gw = await startGateway(['--auth', 'jwt', '--jwt-secret', SECRET, '--auth-timeout', '1500', '--max-payload', '16384']);
  });
  afterEach(() => {
    for (const c of clients) c.close();
    clients = [];
  });
  after(() => gw.stop());

  it('says auth jwt in the welcome and acks a token with its user and expiry', async () => {
    const exp = nowS() + 600;
    const client = track(await TestClient.connect(gw.url));
    expect(client.welcome.auth).to.equal('jwt');
    const ack = await client.request({ type: 'auth', token: await joseHs256({ sub: 'alice', exp }) });
    expect(ack).to.include({ type: 'ack', user: 'alice', expiresAt: exp * 1000 });
  });

  it('accepts a token signed by hand with node:crypto', async () => {
    const token = handToken({ alg: 'HS256', typ: 'JWT' }, { sub: 'bob' }, hmacSign(SECRET));
    const [client, ack] = await authed(gw, token);
    track(client);
    expect(ack).to.include({ type: 'ack', user: 'bob' });
  });

  it('answers unauthorized to any frame before auth, and changes nothing', async () => {
    const client = track(await TestClient.connect(gw.url));
    for (const frame of [{ type: 'subscribe', channel: 'news' }, { type: 'publish', channel: 'news', data: 1 }, { type: 'ping' }]) {
      expect(await client.request(frame)).to.include({ type: 'error', code: 'unauthorized' });
    }
  });

  it('refuses every bad token the same way, without a stack trace, and keeps the connection', async () => {
    const { privateKey, publicPem } = rsaKeys();
    const now = nowS();
    const good = await joseHs256({ sub: 'x' });
    const bad = {
      'alg none': handToken({ alg: 'none' }, { sub: 'x' }),
      'alg none with a signature': handToken({ alg: 'none' }, { sub: 'x' }, hmacSign(SECRET)),
      'HS256 with the RSA public key as secret': handToken({ alg: 'HS256' }, { sub: 'x' }, hmacSign(publicPem)),
      'RS256 by another key': handToken({ alg: 'RS256' }, { sub: 'x' }, rsaSign(privateKey)),
      'wrong secret': await joseHs256({ sub: 'x' }, 'another-secret-that-is-long-enough-987654'),
      truncated: good.slice(0, -5),
      'not base64': 'a$b.c%d.e^f',
      'not a JWT': 'hello',
      'sub a number': handToken({ alg: 'HS256' }, { sub: 42 }, hmacSign(SECRET)),
      'no sub': handToken({ alg: 'HS256' }, {}, hmacSign(SECRET)),
      'no exp': await new (await import('jose')).SignJWT({ sub: 'x' }).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(SECRET)),
      'subscribe a string': handToken({ alg: 'HS256' }, { sub: 'x', subscribe: 'chat:*' }, hmacSign(SECRET)),
      'publish holding an object': handToken({ alg: 'HS256' }, { sub: 'x', publish: [{}] }, hmacSign(SECRET)),
      'pattern with * inside': handToken({ alg: 'HS256' }, { sub: 'x', subscribe: ['a*b'] }, hmacSign(SECRET)),
      'not yet valid': handToken({ alg: 'HS256' }, { sub: 'x', nbf: now + 600 }, hmacSign(SECRET)),
      'a 9 KB token, over the 8 KB cap': handToken({ alg: 'HS256' }, { sub: 'x', pad: 'p'.repeat(9000) }, hmacSign(SECRET))
    };
    // A connection per token: the auth rate limit is for clients in a loop, not this test.
    for (const [what, token] of Object.entries(bad)) {
      const client = track(await TestClient.connect(gw.url));
      const answer = await client.request({ type: 'auth', token });
      expect(answer, what).to.include({ type: 'error', code: 'unauthorized' });
      expect(answer.message, what).to.match(/^invalid token/);
      expect(answer.message, what).not.to.match(/\n\s+at /);
    }
    const client = track(await TestClient.connect(gw.url));
    expect(await client.request({ type: 'auth', token: 42 })).to.include({ code: 'unauthorized' });
    expect(await client.request({ type: 'auth', token: await joseHs256({ sub: 'x', exp: now - 10 }) })).to.include({ code: 'token_expired' });
    await sleep(500); // the auth rate limit
    expect((await client.request({ type: 'auth', token: good })).user).to.equal('x');
    expect(await gw.metric('gateway_auth_failures_total', '{reason="invalid"}')).to.be.at.least(Object.keys(bad).length);
  });

  it('closes with 1009 a token over --max-payload', async () => {
    const client = track(await TestClient.connect(gw.url));
    client.send({ type: 'auth', token: 'a'.repeat(1 << 20) });
    expect((await client.closed).code).to.equal(1009);
  });

  it('rate-limits auth frames per connection', async () => {
    const client = track(await TestClient.connect(gw.url));
    const answers = await Promise.all(Array.from({ length: 6 }, () => client.request({ type: 'auth', token: 'bad' })));
    expect(answers.filter((a) => a.code === 'rate_limited').length).to.be.at.least(3);
  });

  it('allows subscribe and publish by exact name, prefix and {sub}, and forbids the rest', async () => {
    const token = await joseHs256({ sub: 'u7', subscribe: ['news', 'chat:*', 'user:{sub}'], publish: ['chat:*'] });
    const [client] = await authed(gw, token);
    track(client);
    for (const channel of ['news', 'chat:1', 'user:u7']) expect((await client.subscribe(channel)).type, channel).to.equal('ack');
    for (const channel of ['news2', 'chat', 'user:u8', 'user:u7x']) {
      expect(await client.subscribe(channel), channel).to.include({ type: 'error', code: 'forbidden' });
    }
    expect((await client.publish('chat:1', 'hi')).type).to.equal('ack');
    await client.next((f) => f.type === 'message' && f.channel === 'chat:1');
    expect(await client.publish('news', 'no')).to.include({ type: 'error', code: 'forbidden' });
    expect(await client.publish('user:u7', 'no')).to.include({ type: 'error', code: 'forbidden' });
    expect(await gw.metric('gateway_auth_failures_total', '{reason="forbidden"}')).to.be.at.least(6);
  });

  it('forbids recovery on a channel the token may not read, and replays nothing', async () => {
    const [reader] = await authed(gw, await joseHs256({ sub: 'r', subscribe: ['secret'], publish: ['secret'] }));
    track(reader);
    const ack = await reader.subscribe('secret');
    await reader.publish('secret', 'hidden');
    await reader.next((f) => f.type === 'message' && f.channel === 'secret');
    const [other] = await authed(gw, await joseHs256({ sub: 'o', subscribe: ['public'] }));
    track(other);
    const since = { seq: 0, epoch: ack.epoch };
    expect(await other.request({ type: 'subscribe', channel: 'secret', since })).to.include({ type: 'error', code: 'forbidden' });
    // The reader itself recovers it.
    const [again] = await authed(gw, await joseHs256({ sub: 'r', subscribe: ['secret'] }));
    track(again);
    expect(await again.request({ type: 'subscribe', channel: 'secret', since })).to.include({ recovered: true, seq: 1 });
    await again.next((f) => f.type === 'message' && f.channel === 'secret');
    expect(other.messages('secret')).to.deep.equal([]);
  });

  it('takes a sub literally in {sub}: a user called * gets no wildcard', async () => {
    const [client] = await authed(gw, await joseHs256({ sub: '*', subscribe: ['user:{sub}'] }));
    track(client);
    expect(await client.subscribe('user:42')).to.include({ code: 'forbidden' });
  });

  it('extends the connection with a refresh of the same sub, refuses another sub', async () => {
    const firstExp = nowS() + 2;
    const [client] = await authed(gw, await joseHs256({ sub: 'carol', exp: firstExp }));
    track(client);
    const later = nowS() + 600;
    const ack = await client.request({ type: 'auth', token: await joseHs256({ sub: 'carol', exp: later }) });
    expect(ack).to.include({ type: 'ack', user: 'carol', expiresAt: later * 1000 });
    await sleep(500); // the auth rate limit
    const other = await client.request({ type: 'auth', token: await joseHs256({ sub: 'mallory' }) });
    expect(other).to.include({ type: 'error', code: 'unauthorized' });
    // Past the first token's exp the connection is still open and still carol's.
    await eventually(() => Date.now() > firstExp * 1000 + 1500, { timeout: 5000 });
    expect((await client.request({ type: 'ping' })).type).to.equal('pong');
  });

  it('closes with 4003 within about a second of exp', async () => {
    const exp = nowS() + 2;
    const [client] = await authed(gw, await joseHs256({ sub: 'dave', exp }));
    track(client);
    const { code } = await client.closed;
    expect(code).to.equal(4003);
    expect(Date.now() - exp * 1000).to.be.within(0, 1000);
  });

  it('closes with 4001 a connection without a valid token after --auth-timeout', async () => {
    const opened = Date.now();
    const client = track(await TestClient.connect(gw.url));
    client.send({ type: 'auth', token: 'bad' });
    const { code } = await client.closed;
    expect(code).to.equal(4001);
    expect(Date.now() - opened).to.be.within(1400, 2600);
    expect(await gw.metric('gateway_disconnects_total', '{reason="auth_timeout"}')).to.be.at.least(1);
  });
});

describe('auth: RSA public key', function () {
  let gw;
  let keys;
  before(async () => {
    keys = rsaKeys();
    const dir = mkdtempSync(join(tmpdir(), 'gw-auth-'));
    writeFileSync(join(dir, 'public.pem'), keys.publicPem);
    gw = await startGateway(['--auth', 'jwt', '--jwt-public-key', join(dir, 'public.pem'), '--jwt-issuer', 'https://app.example']);
  });
  after(() => gw.stop());

  it('accepts RS256 signed by hand, refuses HS256 signed with the public key and a wrong issuer', async () => {
    const client = await TestClient.connect(gw.url);
    try {
      const hs = handToken({ alg: 'HS256' }, { sub: 'x', iss: 'https://app.example' }, hmacSign(keys.publicPem));
      expect(await client.request({ type: 'auth', token: hs })).to.include({ code: 'unauthorized' });
      const wrongIss = handToken({ alg: 'RS256' }, { sub: 'x', iss: 'https://evil.example' }, rsaSign(keys.privateKey));
      expect(await client.request({ type: 'auth', token: wrongIss })).to.include({ code: 'unauthorized' });
      await sleep(1000);
      const rs = handToken({ alg: 'RS256', typ: 'JWT' }, { sub: 'erin', iss: 'https://app.example' }, rsaSign(keys.privateKey));
      expect(await client.request({ type: 'auth', token: rs })).to.include({ type: 'ack', user: 'erin' });
    } finally {
      client.close();
    }
  });
});

describe('auth: --auth none', function () {
  it('behaves as before and warns once at start', async () => {
    const gw = await startGateway([]);
    try {
      const client = await TestClient.connect(gw.url);
      expect(client.welcome.auth).to.equal(undefined);
      expect((await client.subscribe('any')).type).to.equal('ack');
      expect(gw.logs.filter((l) => l.level === 40 && /--auth none/.test(l.msg))).to.have.length(1);
      client.close();
    } finally {
      await gw.stop();
    }
  });
});
