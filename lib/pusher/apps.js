// Pusher apps: who may speak Pusher's protocol to this gateway. One app from
// the --pusher-* flags, or several from the config file's `pusherApps`;
// checked whole at start, so a bad app is a usage error, never a worker
// that dies on its first connection.
//
// An app: {appId, key, secret, clientEvents, webhookUrl, maxPresenceMembers}.
// The key is public (clients connect to /app/<key>); the secret signs
// channel auth, the HTTP API and webhooks, so it must be long enough not to
// be guessed.

export const MIN_SECRET_LENGTH = 16;
const DEFAULT_MAX_PRESENCE_MEMBERS = 100; // Pusher's own limit
const ID = /^[A-Za-z0-9_-]{1,64}$/; // in internal channel names (./channels.js): no '.' or ':'
const KEY = /^[A-Za-z0-9_-]{1,64}$/; // in the path /app/<key>
const KEYS = ['appId', 'key', 'secret', 'clientEvents', 'webhookUrl', 'maxPresenceMembers'];

/**
 * The apps a resolved configuration names: the flags' one, then the file's.
 * @param {object} config camelCase keys (lib/config.js)
 * @returns {App[]}
 */
export function appsOf(config) {
  const apps = [];
  if (config.pusherAppId !== undefined) {
    apps.push({
      appId: config.pusherAppId,
      key: config.pusherKey,
      secret: config.pusherSecret,
      clientEvents: config.pusherClientEvents ?? false,
      webhookUrl: config.pusherWebhookUrl
    });
  }
  for (const app of config.pusherApps ?? []) apps.push(app);
  return apps.map((app) => ({ clientEvents: false, maxPresenceMembers: DEFAULT_MAX_PRESENCE_MEMBERS, ...app }));
}

/**
 * @param {object} config camelCase keys
 * @returns {string|undefined} what is wrong with the apps, naming the flag or key
 */
export function appsProblem(config) {
  const flags = ['pusherKey', 'pusherSecret', 'pusherClientEvents', 'pusherWebhookUrl'].filter((k) => config[k] !== undefined && config[k] !== false);
  if (config.pusherAppId === undefined && flags.length > 0) return `--${kebab(flags[0])} needs --pusher-app-id`;
  if (config.pusherAppId !== undefined && (config.pusherKey === undefined || config.pusherSecret === undefined)) {
    return '--pusher-app-id needs --pusher-key and --pusher-secret';
  }
  if (config.pusherApps !== undefined && !Array.isArray(config.pusherApps)) return 'pusherApps: must be an array of apps';
  const apps = appsOf(config);
  const ids = new Set();
  const keys = new Set();
  for (let i = 0; i < apps.length; i++) {
    const at = config.pusherAppId !== undefined && i === 0 ? '--pusher-*' : `pusherApps[${i - (config.pusherAppId === undefined ? 0 : 1)}]`;
    const problem = appProblem(apps[i]);
    if (problem) return `${at}: ${problem}`;
    if (ids.has(apps[i].appId)) return `${at}: appId ${apps[i].appId} is given twice`;
    if (keys.has(apps[i].key)) return `${at}: key ${apps[i].key} is given twice`;
    ids.add(apps[i].appId);
    keys.add(apps[i].key);
  }
  return undefined;
}

function appProblem(app) {
  if (app === null || typeof app !== 'object' || Array.isArray(app)) return 'must be an object';
  const unknown = Object.keys(app).find((k) => !KEYS.includes(k));
  if (unknown !== undefined) return `${unknown}: unknown key (known: ${KEYS.join(', ')})`;
  if (typeof app.appId !== 'string' || !ID.test(app.appId)) return 'appId must be 1 to 64 characters of A-Z a-z 0-9 _ -';
  if (typeof app.key !== 'string' || !KEY.test(app.key)) return 'key must be 1 to 64 characters of A-Z a-z 0-9 _ -';
  if (typeof app.secret !== 'string' || app.secret.length < MIN_SECRET_LENGTH) {
    return `secret must be a string of at least ${MIN_SECRET_LENGTH} characters (a short HMAC key can be guessed)`;
  }
  if (typeof app.clientEvents !== 'boolean') return 'clientEvents must be a boolean';
  if (app.webhookUrl !== undefined && (typeof app.webhookUrl !== 'string' || !/^https?:\/\/./.test(app.webhookUrl))) {
    return 'webhookUrl must be an http:// or https:// URL';
  }
  const max = app.maxPresenceMembers;
  if (!Number.isInteger(max) || max < 1 || max > 1e6) return 'maxPresenceMembers must be an integer from 1 to 1000000';
  return undefined;
}

/** The apps by key (the WebSocket path) and by id (the HTTP API's path). */
export class Apps {
  /** @param {object} config resolved */
  constructor(config) {
    this.list = appsOf(config).map((app) => Object.freeze(app));
    this.byKey = new Map(this.list.map((app) => [app.key, app]));
    this.byId = new Map(this.list.map((app) => [app.appId, app]));
  }
}

function kebab(key) {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/**
 * @typedef {object} App
 * @property {string} appId
 * @property {string} key
 * @property {string} secret
 * @property {boolean} clientEvents
 * @property {string} [webhookUrl]
 * @property {number} maxPresenceMembers
 */
