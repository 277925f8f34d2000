// Ably keys are the apps' own (one credential for every protocol): an app
// {appId, key, secret} has the Ably key name `<appId>.<key>` and the key
// `<appId>.<key>:<secret>`; a bare `<key>` names it too. Secrets are compared
// in constant time (lib/core/same-text.js), and taken in clear only where
// --ably-basic-auth says.
import { sameText } from '../core/same-text.js';
import { AblyCode, AblyError } from './errors.js';

/** The key name of an app. */
export function keyNameOf(app) {
  return `${app.appId}.${app.key}`;
}

/**
 * @param {import('../pusher/apps.js').Apps} apps
 * @param {string} keyName `<appId>.<key>`, or `<key>`
 * @returns {import('../pusher/apps.js').App|undefined} the enabled app it names
 */
export function appOfKeyName(apps, keyName) {
  if (typeof keyName !== 'string') return undefined;
  const dot = keyName.indexOf('.');
  const app = dot === -1 ? apps.byKey.get(keyName) : apps.byId.get(keyName.slice(0, dot));
  if (app === undefined || !app.enabled) return undefined;
  return dot === -1 || app.key === keyName.slice(dot + 1) ? app : undefined;
}

/**
 * @param {string} key `<keyName>:<secret>`
 * @returns {import('../pusher/apps.js').App|undefined} the app, when the secret is its own
 */
export function appOfKey(apps, key) {
  if (typeof key !== 'string') return undefined;
  const colon = key.indexOf(':');
  if (colon === -1) return undefined;
  const app = appOfKeyName(apps, key.slice(0, colon));
  return app !== undefined && sameText(key.slice(colon + 1), app.secret) ? app : undefined;
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
