// Ably keys are the apps' own (one credential for every protocol): an app
// {appId, key, secret} has the Ably key name `<appId>.<key>` and the key
// `<appId>.<key>:<secret>`, its capability the app's ablyCapability
// (everything when it has none); a bare `<key>` names it too. An app's
// ablyKeys are further keys `<appId>.<keyId>:<secret>`, each with its own
// capability. Secrets are compared in constant time
// (lib/core/same-text.js), and taken in clear only where --ably-basic-auth
// says.
import { digestOf, sameDigest } from '../core/same-text.js';
import { ALL, capabilityOf } from './capability.js';
import { AblyCode, AblyError } from './errors.js';

/**
 * @typedef {object} AblyKey
 * @property {import('../pusher/apps.js').App} app
 * @property {string} keyId the app's key, or one of its ablyKeys
 * @property {string} secret what signs its TokenRequests and tokens
 * @property {Buffer} secretDigest what a key given in clear is compared with (lib/core/same-text.js)
 * @property {Object<string, string[]>} capability what it may do
 */

// Each app's keys, made once per app (an app changed is a new object).
const keysOfApp = new WeakMap();

/**
 * @param {import('../pusher/apps.js').Apps} apps
 * @param {string} keyName `<appId>.<key>` or `<appId>.<keyId>`, or `<key>`
 * @returns {AblyKey|undefined} the key it names, of an enabled app
 */
export function keyOfName(apps, keyName) {
  if (typeof keyName !== 'string') return undefined;
  const dot = keyName.indexOf('.');
  const app = dot === -1 ? apps.byKey.get(keyName) : apps.byId.get(keyName.slice(0, dot));
  if (app === undefined || !app.enabled) return undefined;
  return keyOfId(app, dot === -1 ? app.key : keyName.slice(dot + 1));
}

/** @returns {AblyKey|undefined} the app's key `keyId` as the app is now */
export function keyOfId(app, keyId) {
  return keysOf(app).get(keyId);
}

/**
 * @param {string} key `<keyName>:<secret>`
 * @returns {AblyKey|undefined} the key, when the secret is its own
 */
export function keyOfCredential(apps, key) {
  if (typeof key !== 'string') return undefined;
  const colon = key.indexOf(':');
  if (colon === -1) return undefined;
  const found = keyOfName(apps, key.slice(0, colon));
  return found !== undefined && sameDigest(key.slice(colon + 1), found.secretDigest) ? found : undefined;
}

/** @returns {Map<string, AblyKey>} the app's keys, by key id (its own key's is its key) */
function keysOf(app) {
  let keys = keysOfApp.get(app);
  if (keys !== undefined) return keys;
  const key = (keyId, secret, capability) => Object.freeze({ app, keyId, secret, secretDigest: digestOf(secret), capability });
  keys = new Map([[app.key, key(app.key, app.secret, app.ablyCapability === null ? ALL : capabilityOf(app.ablyCapability))]]);
  for (const { keyId, secret, capability } of app.ablyKeys) keys.set(keyId, key(keyId, secret, capabilityOf(capability)));
  keysOfApp.set(app, keys);
  return keys;
}

const LOOPBACK = /^(127\.|::1$|::ffff:127\.)/;

/**
 * Whether a key may be taken from this request (--ably-basic-auth): over TLS
 * always (behind an ALB with --trust-forwarded, its X-Forwarded-Proto https
 * says so); in clear as the policy says: `loopback` from this machine only,
 * `allow` from anywhere, `deny` never.
 * @param {string} ip the client's address (lib/session/client-ip.js)
 * @throws {AblyError} 40103
 */
export function checkKeyInClear(req, ip, { ablyBasicAuth, trustForwarded }) {
  if (req.socket.encrypted === true || ablyBasicAuth === 'allow') return;
  if (trustForwarded && /(^|,)\s*https\s*$/.test(req.headers['x-forwarded-proto'] ?? '')) return;
  if (ablyBasicAuth === 'loopback' && LOOPBACK.test(ip)) return;
  throw new AblyError(AblyCode.BASIC_AUTH_REFUSED, ablyBasicAuth === 'deny' ? 'a key is taken over TLS only: use token auth' : 'a key is taken over TLS or from this machine only: use token auth');
}
