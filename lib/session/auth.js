// Token verification: one function wrapping jose's jwtVerify, shared by
// everything that accepts a token. It resolves with the identity or rejects
// with a coded refusal (AuthFailed), and spends at most one signature
// verification per token.
//
// The accepted algorithms follow from the configured key alone: an HMAC
// secret accepts HS*, a public key only the algorithms of its type, a JWKS
// only asymmetric ones. Nothing in the token (alg: none, an HMAC token signed
// with the RSA public key as its secret) can change that.
import { readFileSync } from 'node:fs';
import { createPublicKey } from 'node:crypto';
import { require } from '../runtime/require.js';
import { AuthFailed, ErrorCode } from '../core/errors.js';
import { identityFrom } from '../core/identity.js';
import { PermissionsCache } from '../core/permissions.js';
import { boundedJwksFetch } from './jwks-fetch.js';

const MAX_TOKEN_LENGTH = 8192; // longer is refused before any decoding
// The JWKS is fetched at most once per cooldown, however many connections
// present an unknown kid and whether or not the endpoint answers
// (./jwks-fetch.js): neither a forged kid nor an outage makes the gateway
// hammer the IdP.
const JWKS_COOLDOWN_MS = 5000;
const JWKS_TIMEOUT_MS = 5000;

const HMAC = ['HS256', 'HS384', 'HS512'];
const RSA = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];
const BY_CURVE = { prime256v1: ['ES256'], secp384r1: ['ES384'], secp521r1: ['ES512'] };
const ASYMMETRIC = [...RSA, 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

/**
 * @param {object} config resolved gateway configuration with auth 'jwt'
 * @param {import('pino').Logger} log
 * @returns {(token: *) => Promise<import('../core/identity.js').Identity>} the token's claims
 *   (./identity.js); rejects with AuthFailed saying why it is refused
 */
export function createVerifier(config, log) {
  // Loaded here, under --auth jwt only: jose costs a worker ~9 MB of RSS.
  const jose = require('jose');
  const { key, algorithms } = verificationKey(config, jose, log);
  const { jwtVerify } = jose;
  const permissions = new PermissionsCache();
  const options = {
    algorithms,
    audience: config.jwtAudience,
    issuer: config.jwtIssuer,
    requiredClaims: ['sub', 'exp']
  };

  return async function verify(token) {
    if (typeof token !== 'string' || token === '') throw new AuthFailed(ErrorCode.UNAUTHORIZED, 'missing', 'auth needs a token');
    if (token.length > MAX_TOKEN_LENGTH) throw invalid();
    let payload;
    try {
      ({ payload } = await jwtVerify(token, key, options));
    } catch (err) {
      if (err.code === 'ERR_JWT_EXPIRED') throw new AuthFailed(ErrorCode.TOKEN_EXPIRED, 'expired', 'the token has expired');
      throw invalid();
    }
    if (!Number.isFinite(payload.exp)) throw invalid();
    const identity = identityFrom(payload.sub, payload.exp, payload, 'sub', permissions);
    if (typeof identity === 'string') throw invalid(identity);
    return identity;
  };
}

// One message for every bad token, so a refusal tells a prober nothing.
function invalid(detail) {
  return new AuthFailed(ErrorCode.UNAUTHORIZED, 'invalid', detail ? `invalid token: ${detail}` : 'invalid token');
}

function verificationKey(config, { createRemoteJWKSet, customFetch }, log) {
  if (config.jwtSecret !== undefined) return { key: new TextEncoder().encode(config.jwtSecret), algorithms: HMAC };
  if (config.jwtJwksUrl !== undefined) {
    const jwks = createRemoteJWKSet(new URL(config.jwtJwksUrl), {
      cooldownDuration: JWKS_COOLDOWN_MS,
      timeoutDuration: JWKS_TIMEOUT_MS,
      [customFetch]: boundedJwksFetch({ cooldownMs: JWKS_COOLDOWN_MS, log })
    });
    return { key: jwks, algorithms: ASYMMETRIC };
  }
  const key = createPublicKey(readFileSync(config.jwtPublicKey));
  return { key, algorithms: algorithmsFor(key) };
}

function algorithmsFor(key) {
  const type = key.asymmetricKeyType;
  if (type === 'rsa') return RSA;
  if (type === 'rsa-pss') return ['PS256', 'PS384', 'PS512'];
  if (type === 'ec') return BY_CURVE[key.asymmetricKeyDetails.namedCurve] ?? [];
  if (type === 'ed25519' || type === 'ed448') return ['EdDSA', 'Ed25519'];
  return [];
}
