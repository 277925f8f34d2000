// Keys from a JWKS endpoint (a local HTTP server that counts its requests):
// rotation is picked up, and an unknown kid refetches once per cooldown, not
// once per connection; while the endpoint fails, still at most once per
// cooldown, the keys already fetched keep verifying, and the outage is
// logged once and its end once.
import http from 'node:http';
import { once } from 'node:events';
import { expect } from 'chai';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';
import { sleep } from '../../helpers/wait.js';

async function esKey(kid) {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

function sign(key, sub) {
  return new SignJWT({ sub })
    .setProtectedHeader({ alg: 'ES256', kid: key.kid })
    .setExpirationTime('1h')
    .sign(key.privateKey);
}

/** Opens `n` connections at once, each sending `token`; resolves their answers. */
async function authMany(gw, n, token) {
  const clients = await Promise.all(Array.from({ length: n }, () => TestClient.connect(gw.url)));
  try {
    return await Promise.all(clients.map((c) => c.request({ type: 'auth', token })));
  } finally {
    for (const c of clients) c.close();
  }
}

describe('auth: JWKS', function () {
  let gw;
  let jwks;
  let served = [];
  let fetches = 0;
  let failing = false;

  before(async () => {
    jwks = http.createServer((req, res) => {
      fetches++;
      if (failing) return res.writeHead(500).end('identity provider down');
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ keys: served.map((k) => k.jwk) }));
    });
    jwks.listen(0, '127.0.0.1');
    await once(jwks, 'listening');
  });
  afterEach(async () => {
    await gw?.stop();
    fetches = 0;
  });
  after(() => jwks.close());

  it('verifies with the served keys, picks up a rotation, and refetches once for many unknown kids', async () => {
    const [a, b, unknown] = await Promise.all([esKey('a'), esKey('b'), esKey('c')]);
    served = [a];
    const url = `http://127.0.0.1:${jwks.address().port}/.well-known/jwks.json`;
    gw = await startGateway(['--auth', 'jwt', '--jwt-jwks-url', url, '--workers', '1']);

    const first = await authMany(gw, 10, await sign(a, 'u1'));
    expect(first.every((f) => f.type === 'ack' && f.user === 'u1')).to.equal(true);
    expect(fetches).to.equal(1);

    // Within the cooldown, unknown kids cost no fetch at all.
    const forged = await authMany(gw, 10, await sign(unknown, 'u2'));
    expect(forged.every((f) => f.code === 'unauthorized')).to.equal(true);
    expect(fetches).to.equal(1);

    served = [a, b]; // the identity provider rotates in a new key
    const tokenB = await sign(b, 'u3');
    await eventually(async () => (await authMany(gw, 1, tokenB))[0].type === 'ack', { interval: 500, what: 'key b accepted' });
    expect(fetches).to.equal(2);
    const many = await authMany(gw, 10, tokenB);
    expect(many.every((f) => f.type === 'ack')).to.equal(true);
    expect(fetches).to.equal(2);
  });

  it('fetches at most once per cooldown while the endpoint fails, keeps verifying with the keys it has, logs the outage and its end once', async () => {
    const COOLDOWN = 5000;
    const [a, unknown] = await Promise.all([esKey('a'), esKey('z')]);
    served = [a];
    const url = `http://127.0.0.1:${jwks.address().port}/jwks`;
    gw = await startGateway(['--auth', 'jwt', '--jwt-jwks-url', url, '--workers', '1']);
    const tokenA = await sign(a, 'u1');
    const forged = await sign(unknown, 'u2');
    expect((await authMany(gw, 1, tokenA))[0].type).to.equal('ack');
    expect(fetches).to.equal(1);

    failing = true;
    await sleep(COOLDOWN + 200);
    // Past the cooldown: unknown kids make one request, which fails...
    expect((await authMany(gw, 20, forged)).every((f) => f.code === 'unauthorized')).to.equal(true);
    expect(fetches).to.equal(2);
    // ...and none more until the next cooldown, however many come.
    expect((await authMany(gw, 20, forged)).every((f) => f.code === 'unauthorized')).to.equal(true);
    expect(fetches).to.equal(2);
    // The keys fetched before the outage still verify.
    expect((await authMany(gw, 5, tokenA)).every((f) => f.type === 'ack')).to.equal(true);

    failing = false;
    await sleep(COOLDOWN + 200);
    await authMany(gw, 5, forged);
    expect(fetches).to.equal(3);
    // The worker's log comes over its stdout, on its own way: it may trail the auth answers.
    await eventually(() => gw.logs.some((l) => l.msg === 'JWKS endpoint answers again'), { what: 'the recovery logged' });
    expect(gw.logs.filter((l) => l.msg.startsWith('JWKS endpoint failing'))).to.have.length(1);
    expect(gw.logs.filter((l) => l.msg === 'JWKS endpoint answers again')).to.have.length(1);
    expect(await gw.metric('gateway_jwks_fetches_total', '{result="ok"}')).to.equal(2);
    expect(await gw.metric('gateway_jwks_fetches_total', '{result="failed"}')).to.equal(1);
  });
});
