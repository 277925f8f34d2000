// Ably's token auth. A TokenRequest ({keyName, ttl, capability, clientId,
// timestamp, nonce, mac}, made by the application's backend or by ably-js
// from a key) is exchanged at POST /keys/<keyName>/requestToken for a token:
// an Ably JWT (HS256, `kid` the key name, signed with the key's secret), so
// any worker or node verifies it without shared state, and a JWT the
// application mints itself the same way is accepted as well.
import { createHmac } from 'node:crypto';
import { require } from '../runtime/require.js';
import { sameText } from '../core/same-text.js';
import { keyOfName } from './keys.js';
import { intersect, parseCapability } from './capability.js';
import { AblyCode, AblyError } from './errors.js';

const DEFAULT_TTL_MS = 60 * 60 * 1000;
const MAX_TTL_MS = 24 * 60 * 60 * 1000;
export const MAX_SKEW_MS = 10 * 60 * 1000; // a TokenRequest's timestamp from the gateway's clock
const MAX_TOKEN_LENGTH = 8192;

let jose; // loaded at the first token: it costs a worker ~9 MB of RSS

/**
 * Checks a TokenRequest and issues its token.
 * @param {import('../pusher/apps.js').Apps} apps
 * @param {string} keyName the path's
 * @param {object} request the body
 * @param {(app: object, nonce: string) => Promise<boolean>} claimNonce whether the
 *   request's nonce is new (a replay's is not), asked once the request is the key's
 * @returns {Promise<object>} Ably's TokenDetails
 * @throws {AblyError} 40101 (unknown key, bad mac), 40104 (timestamp), 40105 (a replay), 40000 (malformed)
 */
export async function issueToken(apps, keyName, request, claimNonce, now = Date.now()) {
  if (request === null || typeof request !== 'object') throw new AblyError(AblyCode.BAD_REQUEST, 'a TokenRequest is a JSON object');
  const { ttl, capability, clientId, timestamp, nonce, mac } = request;
  const key = request.keyName === keyName ? keyOfName(apps, keyName) : undefined;
  if (key === undefined) throw new AblyError(AblyCode.NO_CREDENTIALS, 'no such key');
  const { app, secret } = key;
  for (const [name, value] of [['capability', capability], ['clientId', clientId], ['nonce', nonce], ['mac', mac]]) {
    if (value !== undefined && typeof value !== 'string') throw new AblyError(AblyCode.BAD_REQUEST, `${name} must be a string`);
  }
  if (ttl !== undefined && (!Number.isSafeInteger(ttl) || ttl <= 0 || ttl > MAX_TTL_MS)) throw new AblyError(AblyCode.BAD_REQUEST, `ttl is 1 to ${MAX_TTL_MS} ms`);
  if (!Number.isSafeInteger(timestamp)) throw new AblyError(AblyCode.BAD_REQUEST, 'timestamp must be ms since 1970');
  if (typeof nonce !== 'string' || nonce.length === 0 || nonce.length > 64) throw new AblyError(AblyCode.BAD_REQUEST, 'nonce must be a string of 1 to 64 characters');
  if (clientId === '') throw new AblyError(AblyCode.CLIENT_ID_MISMATCH, 'clientId may not be empty');
  const signed = `${keyName}\n${ttl ?? ''}\n${capability ?? ''}\n${clientId ?? ''}\n${timestamp}\n${nonce}\n`;
  if (!sameText(mac, createHmac('sha256', secret).update(signed).digest('base64'))) {
    throw new AblyError(AblyCode.NO_CREDENTIALS, 'the TokenRequest\'s mac does not match');
  }
  if (Math.abs(now - timestamp) > MAX_SKEW_MS) throw new AblyError(AblyCode.TIMESTAMP, 'the TokenRequest\'s timestamp is more than 10 minutes from the server\'s time');
  const granted = intersect(key.capability, capability === undefined ? undefined : parseCapability(capability));
  if (!(await claimNonce(app, nonce))) throw new AblyError(AblyCode.NONCE_REUSED, 'the TokenRequest\'s nonce was used already');
  const expires = now + (ttl ?? DEFAULT_TTL_MS);
  const claims = { 'x-ably-capability': JSON.stringify(granted), ...(clientId !== undefined && { 'x-ably-clientId': clientId }) };
  jose ??= require('jose');
  const token = await new jose.SignJWT(claims)
    .setProtectedHeader({ typ: 'JWT', alg: 'HS256', kid: keyName })
    .setIssuedAt(Math.floor(now / 1000))
    .setExpirationTime(Math.floor(expires / 1000))
    .sign(new TextEncoder().encode(secret));
  return { token, keyName, issued: now, expires, capability: claims['x-ably-capability'], ...(clientId !== undefined && { clientId }) };
}

/**
 * @param {import('../pusher/apps.js').Apps} apps
 * @param {string} token an Ably JWT
 * @returns {Promise<{app: object, capability: object, clientId: string|undefined, expires: number}>}
 * @throws {AblyError} 40144 (not one of the apps' tokens), 40142 (expired), 40140 (otherwise unusable)
 */
export async function verifyToken(apps, token) {
  if (typeof token !== 'string' || token === '' || token.length > MAX_TOKEN_LENGTH) throw new AblyError(AblyCode.TOKEN_BAD, 'not a token');
  jose ??= require('jose');
  let kid;
  try {
    ({ kid } = jose.decodeProtectedHeader(token));
  } catch {
    throw new AblyError(AblyCode.TOKEN_BAD, 'not a token');
  }
  const key = keyOfName(apps, kid);
  if (key === undefined) throw new AblyError(AblyCode.TOKEN_BAD, 'the token names no key of this gateway');
  let payload;
  try {
    ({ payload } = await jose.jwtVerify(token, new TextEncoder().encode(key.secret), { algorithms: ['HS256'], requiredClaims: ['exp'] }));
  } catch (err) {
    if (err.code === 'ERR_JWT_EXPIRED') throw new AblyError(AblyCode.TOKEN_EXPIRED, 'the token has expired');
    throw new AblyError(AblyCode.TOKEN_BAD, 'the token\'s signature or claims are not valid');
  }
  if (payload.iat !== undefined && (payload.exp - payload.iat) * 1000 > MAX_TTL_MS) throw new AblyError(AblyCode.TOKEN, 'a token lives at most 24 hours');
  const clientId = payload['x-ably-clientId'];
  if (clientId !== undefined && (typeof clientId !== 'string' || clientId === '')) throw new AblyError(AblyCode.TOKEN, 'the token\'s clientId is not a string');
  const text = payload['x-ably-capability'];
  // Within the key's, whoever signed it: a JWT the backend mints may ask for more.
  const capability = text === undefined ? key.capability : intersect(key.capability, parseCapability(text));
  return { app: key.app, capability, clientId, expires: payload.exp * 1000 };
}
