// Token verification: one function wrapping jose's jwtVerify, shared by
// everything that accepts a token. It returns the identity or a coded refusal,
// never throws, and spends at most one signature verification per token.
//
// The accepted algorithms follow from the configured key alone: an HMAC
// secret accepts HS*, a public key only the algorithms of its type, a JWKS
// only asymmetric ones. Nothing in the token (alg: none, an HMAC token signed
// with the RSA public key as its secret) can change that.
import { readFileSync } from 'node:fs';
import { createPublicKey } from 'node:crypto';
import { require } from '../require.js';
import { ErrorCode, MAX_USER_LENGTH, infoProblem, isValidChannel } from '../protocol.js';
import { compilePermissions } from './permissions.js';

const MAX_TOKEN_LENGTH = 8192; // longer is refused before any decoding
const MAX_CHANNELS = 256; // in the `channels` claim
// An unknown kid refetches the JWKS at most once per cooldown, however many
// connections present it: a forged kid cannot make the gateway hammer the IdP.
const JWKS_COOLDOWN_MS = 5000;
const JWKS_TIMEOUT_MS = 5000;

const HMAC = ['HS256', 'HS384', 'HS512'];
const RSA = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'];
const BY_CURVE = { prime256v1: ['ES256'], secp384r1: ['ES384'], secp521r1: ['ES512'] };
const ASYMMETRIC = [...RSA, 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

/** A refused token: `code` for the client, `reason` for the metrics. */
export class AuthError extends Error {
  constructor(code, reason, message) {
    super(message);
    this.code = code;
    this.reason = reason;
  }
}

/**
 * @param {object} config resolved gateway configuration with auth 'jwt'
 * @returns {(token: *) => Promise<{user: string, expiresAt: number, permissions: object, channels: string[], info?: object}|AuthError>}
 *   `channels`: the claim's, the server-side subscriptions made at authentication;
 *   `info`: the claim's, shown in presence
 */
export function createVerifier(config) {
  // Loaded here, under --auth jwt only: jose costs a worker ~9 MB of RSS.
  const { createRemoteJWKSet, jwtVerify } = require('jose');
  const { key, algorithms } = verificationKey(config, createRemoteJWKSet);
  const options = {
    algorithms,
    audience: config.jwtAudience,
    issuer: config.jwtIssuer,
    requiredClaims: ['sub', 'exp']
  };

  return async function verify(token) {
    if (typeof token !== 'string' || token === '') return new AuthError(ErrorCode.UNAUTHORIZED, 'missing', 'auth needs a token');
    if (token.length > MAX_TOKEN_LENGTH) return invalid();
    let payload;
    try {
      ({ payload } = await jwtVerify(token, key, options));
    } catch (err) {
      if (err.code === 'ERR_JWT_EXPIRED') return new AuthError(ErrorCode.TOKEN_EXPIRED, 'expired', 'the token has expired');
      return invalid();
    }
    const { sub, exp } = payload;
    if (typeof sub !== 'string' || sub === '' || sub.length > MAX_USER_LENGTH) {
      return invalid(`sub must be a string of 1 to ${MAX_USER_LENGTH} characters`);
    }
    if (!Number.isFinite(exp)) return invalid();
    const permissions = compilePermissions(payload.subscribe, payload.publish);
    if (typeof permissions === 'string') return invalid(permissions);
    const channels = payload.channels ?? NO_CHANNELS;
    if (!Array.isArray(channels) || channels.length > MAX_CHANNELS || !channels.every(isValidChannel)) {
      return invalid(`channels must be an array of at most ${MAX_CHANNELS} channel names`);
    }
    const problem = infoProblem(payload.info);
    if (problem !== undefined) return invalid(problem);
    return { user: sub, expiresAt: exp * 1000, permissions, channels, info: payload.info };
  };
}

const NO_CHANNELS = Object.freeze([]);

// One message for every bad token, so a refusal tells a prober nothing.
function invalid(detail) {
  return new AuthError(ErrorCode.UNAUTHORIZED, 'invalid', detail ? `invalid token: ${detail}` : 'invalid token');
}

function verificationKey(config, createRemoteJWKSet) {
  if (config.jwtSecret !== undefined) return { key: new TextEncoder().encode(config.jwtSecret), algorithms: HMAC };
  if (config.jwtJwksUrl !== undefined) {
    const jwks = createRemoteJWKSet(new URL(config.jwtJwksUrl), {
      cooldownDuration: JWKS_COOLDOWN_MS,
      timeoutDuration: JWKS_TIMEOUT_MS
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
