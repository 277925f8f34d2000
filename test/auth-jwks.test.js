// Keys from a JWKS endpoint (a local HTTP server that counts its requests):
// rotation is picked up, and an unknown kid refetches once per cooldown, not
// once per connection.
import http from 'node:http';
import { once } from 'node:events';
import { expect } from 'chai';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { startGateway, eventually } from '../scripts/harness/gateway.js';
import { TestClient } from './helpers/client.js';

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

  before(async () => {
    jwks = http.createServer((req, res) => {
      fetches++;
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ keys: served.map((k) => k.jwk) }));
    });
    jwks.listen(0, '127.0.0.1');
    await once(jwks, 'listening');
  });
  after(async () => {
    await gw?.stop();
    jwks.close();
  });

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
});
