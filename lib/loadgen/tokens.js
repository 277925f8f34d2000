// Tokens for a gateway under --auth jwt: one shared token (--token), or one
// per connection signed with jose from --jwt-secret (HS256), `sub` the
// prefix and the connection's global index, allowed to subscribe and publish
// on every channel. Signed once per connection before the ramp, so a connect
// or a re-dial never waits for one.
import { createSecretKey } from 'node:crypto';
import { SignJWT } from 'jose';

// The tokens outlive any run: a connection is closed at its token's exp.
const LIFETIME_S = 24 * 3600;

/**
 * @param {{token?: string, jwtSecret?: string, jwtSubPrefix?: string}} [auth]
 * @param {number} first global index of the first connection
 * @param {number} count
 * @returns {Promise<string[]|undefined>} a token per connection, or undefined without auth
 */
export async function connectionTokens({ token, jwtSecret, jwtSubPrefix = '' } = {}, first, count) {
  if (token !== undefined) return new Array(count).fill(token);
  if (jwtSecret === undefined) return undefined;
  const key = createSecretKey(Buffer.from(jwtSecret));
  const exp = Math.floor(Date.now() / 1000) + LIFETIME_S;
  return Promise.all(
    Array.from({ length: count }, (_, k) =>
      new SignJWT({ subscribe: ['*'], publish: ['*'] }).setProtectedHeader({ alg: 'HS256' }).setSubject(`${jwtSubPrefix}${first + k}`).setExpirationTime(exp).sign(key)
    )
  );
}
