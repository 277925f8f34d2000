// auth: what --auth jwt adds to a connection. The same clients open and hold
// connections against the gateway with --auth none (handshake and one ping
// frame), then with --auth jwt and an HS256 secret, then an ES256 public key
// (handshake and one auth frame, every client its own sub): server CPU per
// connection and memory per idle authenticated connection, each over the first.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT, exportSPKI, generateKeyPair } from 'jose';
import { heldCost, overFirst } from '../held-cost.js';

const SECRET = 'bench-secret-bench-secret-bench-secret';
const CLAIMS = { subscribe: ['chat:*', 'user:{sub}'], publish: ['chat:*'] };

export async function auth(opts) {
  const es = await generateKeyPair('ES256');
  const dir = mkdtempSync(join(tmpdir(), 'gateway-bench-auth-'));
  writeFileSync(join(dir, 'es256.pem'), await exportSPKI(es.publicKey));
  const hmac = new TextEncoder().encode(SECRET);
  const variants = [
    { variant: 'handshake + ping (--auth none)', flags: [] },
    {
      variant: 'handshake + auth, HS256',
      flags: ['--auth', 'jwt', '--jwt-secret', SECRET],
      tokens: await tokens(opts.authConnections, 'HS256', hmac)
    },
    {
      variant: 'handshake + auth, ES256',
      flags: ['--auth', 'jwt', '--jwt-public-key', join(dir, 'es256.pem')],
      tokens: await tokens(opts.authConnections, 'ES256', es.privateKey)
    }
  ];
  const runs = [];
  for (const { variant, flags, tokens: list } of variants) {
    runs.push(
      await heldCost({
        scenario: 'auth',
        variant,
        flags,
        workers: opts.workers,
        size: opts.authConnections,
        url: (server) => server.url,
        clientOptions: list && { token: (i) => list[i % list.length] }
      })
    );
  }
  return overFirst(runs, ['cpuUsPerHandshake', 'heapPerConnBytes', 'userRssPerConnBytes']);
}

// Signed before the run: the bench process's own signing is not the server's cost.
async function tokens(count, alg, key) {
  const exp = Math.floor(Date.now() / 1000) + 3600;
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      new SignJWT({ ...CLAIMS, sub: `user-${i}` }).setProtectedHeader({ alg }).setExpirationTime(exp).sign(key)
    )
  );
}
