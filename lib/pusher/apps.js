// Pusher apps: who may speak Pusher's protocol to this gateway, and each
// one's settings and limits. Apps come from three sources, which may be used
// together: the --pusher-* flags (one app), the config file's `pusherApps`,
// and the apps table in PostgreSQL (lib/primary/apps-database.js). The flags
// and the file are checked whole at start, so a bad one is a usage error; a
// bad row of the table is refused alone (the primary logs it) and the others
// load. One table of fields below is the contract of all three: the config
// file's camelCase keys, the table's columns, their defaults and checks.
//
// The key is public (clients connect to /app/<key>); the secret signs channel
// auth, the HTTP API and webhooks, so it must be long enough not to be guessed.
import { EventEmitter } from 'node:events';
import { capabilityProblem } from '../core/capability.js';

export const MIN_SECRET_LENGTH = 16;
// Each target is sent every event it asks for: a bound on the POSTs one event may cost.
export const MAX_WEBHOOK_TARGETS = 100;
// An app's further Ably keys, each with its own secret and capability.
export const MAX_ABLY_KEYS = 20;
const ID = /^[A-Za-z0-9_-]{1,64}$/; // in internal channel names (./channels.js): no '.' or ':'
const KEY = /^[A-Za-z0-9_-]{1,64}$/; // in the path /app/<key>
const MAX_LIMIT = 1e9;

/** Pusher's webhook events, each of which an app's webhook target may ask for. */
const WEBHOOK_EVENTS = Object.freeze([
  'channel_occupied',
  'channel_vacated',
  'member_added',
  'member_removed',
  'client_event',
  'cache_miss',
  'subscription_count'
]);
// What a plain webhookUrl (the flag, the file's key) is sent: every event Pusher sends unasked.
const URL_EVENTS = Object.freeze(WEBHOOK_EVENTS.filter((event) => event !== 'subscription_count'));

const text = (pattern, what) => (v) => (typeof v === 'string' && pattern.test(v) ? undefined : `must be ${what}`);
const flag = (v) => (typeof v === 'boolean' ? undefined : 'must be true or false');
// A limit's range, also the command line's option spec (lib/config/cli.js checkOption) for `gateway apps`.
const limit = (min) => ({
  number: { type: 'number', integer: true, min, max: MAX_LIMIT },
  check: (v) => (Number.isInteger(v) && v >= min && v <= MAX_LIMIT ? undefined : `must be an integer from ${min} to ${MAX_LIMIT}`)
});

/**
 * An app's fields: the config file's key, the apps table's column, the
 * default (null: no limit), and the check of a given value; `json`, for a
 * column of JSON, an example of it. The table's own constraints
 * (lib/primary/apps-schema.js) are made from the same rules: `pattern`,
 * `minLength`, `number`, `maxItems`.
 */
export const APP_FIELDS = Object.freeze({
  appId: { column: 'id', pattern: ID, check: text(ID, '1 to 64 characters of A-Z a-z 0-9 _ -') },
  key: { column: 'key', pattern: KEY, check: text(KEY, '1 to 64 characters of A-Z a-z 0-9 _ -') },
  secret: {
    column: 'secret',
    minLength: MIN_SECRET_LENGTH,
    check: (v) => (typeof v === 'string' && v.length >= MIN_SECRET_LENGTH ? undefined : `must be a string of at least ${MIN_SECRET_LENGTH} characters (a short HMAC key can be guessed)`)
  },
  enabled: { column: 'enabled', default: true, check: flag },
  clientEvents: { column: 'client_events', default: false, check: flag },
  subscriptionCount: { column: 'subscription_count', default: false, check: flag },
  maxConnections: { column: 'max_connections', default: null, ...limit(0) },
  maxClientEventsPerSecond: { column: 'max_client_events_per_second', default: 10, ...limit(0) },
  maxBackendEventsPerSecond: { column: 'max_backend_events_per_second', default: null, ...limit(0) },
  maxEventPayloadKb: { column: 'max_event_payload_kb', default: 10, ...limit(1) },
  maxEventBatchSize: { column: 'max_event_batch_size', default: 10, ...limit(1) },
  maxEventChannels: { column: 'max_event_channels', default: 100, ...limit(1) },
  maxPresenceMembers: { column: 'max_presence_members', default: 100, ...limit(1) },
  maxPresenceMemberInfoKb: { column: 'max_presence_member_info_kb', default: 2, ...limit(1) },
  webhooks: { column: 'webhooks', default: [], maxItems: MAX_WEBHOOK_TARGETS, check: webhooksProblem, json: '[{"url": "https://…", "events": ["channel_occupied", …]}]' },
  // Ably (lib/ably/keys.js): what the app's own key may do (null: everything), and further keys `<appId>.<keyId>`.
  ablyCapability: { column: 'ably_capability', default: null, check: capabilityProblem, json: '{"chat:*": ["subscribe", "publish"]}' },
  ablyKeys: { column: 'ably_keys', default: [], maxItems: MAX_ABLY_KEYS, check: ablyKeysProblem, json: '[{"keyId": "…", "secret": "…", "capability": {"*": ["subscribe"]}}]' },
  // The config file's and the flags' one URL for every event; the table has `webhooks` only.
  webhookUrl: { check: (v) => (typeof v === 'string' && /^https?:\/\/./.test(v) ? undefined : 'must be an http:// or https:// URL') }
});
const KEYS = Object.keys(APP_FIELDS);
const REQUIRED = ['appId', 'key', 'secret'];

/**
 * The apps a resolved configuration names, each with where it is defined:
 * the flags' one, then the file's.
 * @param {object} config camelCase keys (lib/config/options.js)
 * @returns {{app: object, source: string}[]} as given, unchecked
 */
export function configApps(config) {
  const out = [];
  if (config.pusherAppId !== undefined) {
    const app = { appId: config.pusherAppId, key: config.pusherKey, secret: config.pusherSecret, clientEvents: config.pusherClientEvents ?? false };
    if (config.pusherWebhookUrl !== undefined) app.webhookUrl = config.pusherWebhookUrl;
    out.push({ app, source: '--pusher-*' });
  }
  if (Array.isArray(config.pusherApps)) config.pusherApps.forEach((app, i) => out.push({ app, source: `pusherApps[${i}]` }));
  return out;
}

/**
 * The checked apps of a resolved configuration (flags and file).
 * @returns {App[]}
 */
export function appsOf(config) {
  return configApps(config).map(({ app }) => resolveApp(app));
}

/** Whether this configuration serves Pusher's protocol: an app given, or the apps table that may add some. */
export function servesPusher(config) {
  return config.pusherAppId !== undefined || (config.pusherApps?.length ?? 0) > 0 || config.appsDatabase !== undefined || config.appsLive === true;
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
  const { refused } = mergeApps(configApps(config));
  return refused.length === 0 ? undefined : `${refused[0].source}: ${refused[0].problem}`;
}

/**
 * What is wrong with one app as given (config file keys), or undefined.
 * @returns {string|undefined}
 */
export function appProblem(app) {
  if (app === null || typeof app !== 'object' || Array.isArray(app)) return 'must be an object';
  const unknown = Object.keys(app).find((k) => !KEYS.includes(k));
  if (unknown !== undefined) return `${unknown}: unknown key (known: ${KEYS.join(', ')})`;
  const missing = REQUIRED.find((k) => app[k] === undefined || app[k] === null);
  if (missing !== undefined) return `${missing} is required`;
  for (const key of KEYS) {
    const value = app[key];
    if (value === undefined || (value === null && APP_FIELDS[key].default !== undefined)) continue;
    const problem = APP_FIELDS[key].check(value);
    if (problem !== undefined) return `${key} ${problem}`;
  }
  if (app.ablyKeys?.some((key) => key.keyId === app.key)) return `ablyKeys: keyId ${app.key} is the app's own key`;
  return undefined;
}

/**
 * An app as the gateway holds it: every field, defaults filled (a null
 * where the default is a number means the default), a webhookUrl folded into
 * `webhooks`; frozen. `app` must have passed appProblem().
 * @returns {App}
 */
function resolveApp(app) {
  const out = {};
  for (const [key, field] of Object.entries(APP_FIELDS)) {
    if (key === 'webhookUrl') continue;
    const value = app[key];
    out[key] = value === undefined || (value === null && field.default !== undefined) ? field.default : value;
  }
  const webhooks = out.webhooks.map(({ url, events }) => Object.freeze({ url, events: Object.freeze([...new Set(events ?? URL_EVENTS)]) }));
  if (app.webhookUrl !== undefined) webhooks.push(Object.freeze({ url: app.webhookUrl, events: URL_EVENTS }));
  out.webhooks = Object.freeze(webhooks);
  return Object.freeze(out);
}

/**
 * Apps from several sources as one list: each checked, then the first to
 * claim an id or a key keeps it; a later one is refused naming both sources.
 * @param {{app: object, source: string}[]} given in order of precedence
 * @returns {{apps: App[], refused: {source: string, appId: *, problem: string}[]}}
 */
export function mergeApps(given) {
  const apps = [];
  const refused = [];
  const ids = new Map(); // appId -> source
  const keys = new Map(); // key -> source
  for (const { app, source } of given) {
    const problem = appProblem(app);
    const refuse = (why) => refused.push({ source, appId: app?.appId, problem: why });
    if (problem !== undefined) refuse(problem);
    else if (ids.has(app.appId)) refuse(`appId ${app.appId} is defined twice: ${ids.get(app.appId)} and ${source}`);
    else if (keys.has(app.key)) refuse(`key ${app.key} is defined twice: ${keys.get(app.key)} and ${source}`);
    else {
      ids.set(app.appId, source);
      keys.set(app.key, source);
      apps.push(resolveApp(app));
    }
  }
  return { apps, refused };
}

/**
 * This process's apps, by key (the WebSocket path) and by id (the HTTP API's
 * path and internal channel names). In the primary they are what the
 * sources hold now; a worker gets them from the primary at start and each
 * change after (Op.APPS). Listeners of 'change' hear (app, previous) per
 * app added (previous undefined), changed, or removed (app undefined).
 */
export class Apps extends EventEmitter {
  /** @param {App[]} [list] */
  constructor(list = []) {
    super();
    this.byKey = new Map();
    this.byId = new Map();
    this.degraded = false; // a source of apps is out of reach: the apps it gave are kept meanwhile
    this.update(list, []);
  }

  /** @returns {App[]} */
  get list() {
    return [...this.byId.values()];
  }

  /**
   * Every app at once: what is not in `list` is removed.
   * @returns {{upserts: App[], removed: string[]}} what changed
   */
  replace(list) {
    const next = new Set(list.map((app) => app.appId));
    const upserts = list.filter((app) => !sameApp(app, this.byId.get(app.appId)));
    const removed = [...this.byId.keys()].filter((id) => !next.has(id));
    this.update(upserts, removed);
    return { upserts, removed };
  }

  /** Adds or replaces `upserts`, removes the apps of the ids `removed`; listeners hear each. */
  update(upserts, removed) {
    const changes = [];
    for (const id of removed) {
      const previous = this.byId.get(id);
      if (previous === undefined) continue;
      this.byId.delete(id);
      if (this.byKey.get(previous.key) === previous) this.byKey.delete(previous.key);
      changes.push([undefined, previous]);
    }
    for (const app of upserts) {
      const previous = this.byId.get(app.appId);
      if (previous !== undefined && this.byKey.get(previous.key) === previous) this.byKey.delete(previous.key);
      this.byId.set(app.appId, app);
      this.byKey.set(app.key, app);
      changes.push([app, previous]);
    }
    for (const [app, previous] of changes) this.emit('change', app, previous);
  }
}

function sameApp(a, b) {
  return b !== undefined && JSON.stringify(a) === JSON.stringify(b);
}

function webhooksProblem(list) {
  if (!Array.isArray(list)) return 'must be an array of {"url", "events"}';
  if (list.length > MAX_WEBHOOK_TARGETS) return `holds ${list.length} targets: at most ${MAX_WEBHOOK_TARGETS} (each is sent every event it asks for)`;
  for (const [i, target] of list.entries()) {
    if (target === null || typeof target !== 'object' || Array.isArray(target)) return `[${i}] must be an object {"url", "events"}`;
    const unknownKey = Object.keys(target).find((k) => k !== 'url' && k !== 'events');
    if (unknownKey !== undefined) return `[${i}].${unknownKey}: unknown key (known: url, events)`;
    if (typeof target.url !== 'string' || !/^https?:\/\/./.test(target.url)) return `[${i}].url must be an http:// or https:// URL`;
    if (target.events === undefined) continue;
    if (!Array.isArray(target.events)) return `[${i}].events must be an array of event names`;
    const unknown = target.events.find((event) => !WEBHOOK_EVENTS.includes(event));
    if (unknown !== undefined) return `[${i}].events: ${JSON.stringify(unknown)} is not one of ${WEBHOOK_EVENTS.join(', ')}`;
  }
  return undefined;
}

function ablyKeysProblem(list) {
  if (!Array.isArray(list)) return 'must be an array of {"keyId", "secret", "capability"}';
  if (list.length > MAX_ABLY_KEYS) return `holds ${list.length} keys: at most ${MAX_ABLY_KEYS}`;
  const ids = new Set();
  for (const [i, key] of list.entries()) {
    if (key === null || typeof key !== 'object' || Array.isArray(key)) return `[${i}] must be an object {"keyId", "secret", "capability"}`;
    const unknownKey = Object.keys(key).find((k) => k !== 'keyId' && k !== 'secret' && k !== 'capability');
    if (unknownKey !== undefined) return `[${i}].${unknownKey}: unknown key (known: keyId, secret, capability)`;
    const idProblem = APP_FIELDS.key.check(key.keyId);
    if (idProblem !== undefined) return `[${i}].keyId ${idProblem}`;
    if (ids.has(key.keyId)) return `[${i}].keyId ${key.keyId} is given twice`;
    ids.add(key.keyId);
    const secretProblem = APP_FIELDS.secret.check(key.secret);
    if (secretProblem !== undefined) return `[${i}].secret ${secretProblem}`;
    const capability = capabilityProblem(key.capability);
    if (capability !== undefined) return `[${i}].capability ${capability}`;
  }
  return undefined;
}

function kebab(key) {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/**
 * @typedef {object} App
 * @property {string} appId
 * @property {string} key
 * @property {string} secret
 * @property {boolean} enabled
 * @property {boolean} clientEvents
 * @property {boolean} subscriptionCount
 * @property {number|null} maxConnections
 * @property {number} maxClientEventsPerSecond
 * @property {number|null} maxBackendEventsPerSecond
 * @property {number} maxEventPayloadKb
 * @property {number} maxEventBatchSize
 * @property {number} maxEventChannels
 * @property {Object<string, string[]>|null} ablyCapability its own key's Ably capability; null: everything
 * @property {{keyId: string, secret: string, capability: Object<string, string[]>}[]} ablyKeys its further Ably keys
 * @property {number} maxPresenceMembers
 * @property {number} maxPresenceMemberInfoKb
 * @property {{url: string, events: string[]}[]} webhooks
 */
