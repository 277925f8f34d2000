// Ably keys are the apps' own (one credential for every protocol): an app
// {appId, key, secret} has the Ably key name `<appId>.<key>` and the key
// `<appId>.<key>:<secret>`; a bare `<key>` names it too. Secrets are compared
// in constant time (lib/core/same-text.js).
import { sameText } from '../core/same-text.js';

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
