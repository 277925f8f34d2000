// Channel namespaces (`namespaces` in the --config file): channels that
// behave differently by purpose. A channel's namespace is the part of its
// name before the first `:` (`chat:42` is in `chat`); a channel without `:`
// follows the top-level options. Once namespaces are configured, a prefix
// that names none is refused, so a typo never silently gets the defaults.
//
// Each option of a namespace defaults to the top-level value. Used by the
// workers (unknown namespaces, clientPublish, latest) and by the engines
// (history size and TTL, latest), each from the same resolved list.
import { checkOption } from '../config/cli.js';

const HASH = 0x23; // '#'

/** The `app` label of the native protocol's traffic in the metrics; another protocol's app is labelled by its id. */
export const NATIVE_APP = 'native';
const NAME = /^[A-Za-z0-9_.@/-]{1,64}$/;

/** A namespace's options: the table's flag (for its checks) or 'boolean', and the default. */
const SETTINGS = {
  historySize: 'history-size',
  historyTtl: 'history-ttl',
  presence: 'boolean',
  joinLeave: 'boolean',
  latest: 'boolean',
  clientPublish: 'boolean',
  subscribeHook: 'boolean',
  publishHook: 'boolean',
  delta: 'boolean'
};

const FALSE_BY_DEFAULT = ['presence', 'joinLeave', 'latest', 'subscribeHook', 'publishHook', 'delta'];

/**
 * @typedef {object} Namespace
 * @property {string} name '' for the top level
 * @property {number} historySize
 * @property {number} historyTtl seconds
 * @property {boolean} presence
 * @property {boolean} joinLeave
 * @property {boolean} latest a subscribe is followed by the channel's latest message
 * @property {boolean} clientPublish false: only the server API publishes
 * @property {boolean} subscribeHook
 * @property {boolean} publishHook
 * @property {boolean} delta a subscriber may take messages as deltas (`"delta": "fossil"`)
 * @property {number} [idempotencyWindowMs] how long a publish's idempotency key is remembered on its channels, where not
 *   the engines' IDEMPOTENCY_WINDOW_MS (lib/engines/idempotency.js): a protocol's own namespaces only
 */

/**
 * Checks the `namespaces` value of a configuration.
 * @param {*} list as given (the file's JSON)
 * @param {object} table the options table (lib/config/options.js), for the history checks
 * @returns {string|undefined} what is wrong, naming the key
 */
export function namespacesProblem(list, table) {
  if (!Array.isArray(list)) return 'namespaces: must be an array of objects';
  const seen = new Set();
  for (let i = 0; i < list.length; i++) {
    const ns = list[i];
    const at = `namespaces[${i}]`;
    if (ns === null || typeof ns !== 'object' || Array.isArray(ns)) return `${at}: must be an object`;
    if (typeof ns.name !== 'string' || !NAME.test(ns.name)) {
      return `${at}.name: must be 1 to 64 characters of A-Z a-z 0-9 _ . @ / - (no ':'), got ${JSON.stringify(ns.name)}`;
    }
    if (seen.has(ns.name)) return `${at}.name: duplicate namespace ${JSON.stringify(ns.name)}`;
    seen.add(ns.name);
    for (const [key, value] of Object.entries(ns)) {
      if (key === 'name') continue;
      const spec = SETTINGS[key];
      if (spec === undefined) return `${at}.${key}: unknown key (known: name, ${Object.keys(SETTINGS).join(', ')})`;
      if (spec === 'boolean' ? typeof value !== 'boolean' : typeof value !== 'number') {
        return `${at}.${key}: must be a ${spec === 'boolean' ? 'boolean' : 'number'}, got ${JSON.stringify(value)}`;
      }
      const problem = spec === 'boolean' ? undefined : checkOption(spec, table[spec], value);
      if (problem) return `${at}.${key}: ${problem}`;
    }
  }
  return undefined;
}

/**
 * @returns {boolean} whether `channel` belongs to another protocol than the
 *   native one: its name starts with '#', which no native name can spell, and
 *   native clients never see it
 */
export function isProtocolChannel(channel) {
  return channel.charCodeAt(0) === HASH;
}

// Another protocol's channel is named `#<app>.<kind>:<name>`: its app, and
// its namespace (everything before the ':', one per app and kind), are read
// here for every layer.

/** The app of another protocol's channel. */
export function protocolAppOf(channel) {
  return channel.slice(1, channel.indexOf('.'));
}

/** The namespace of another protocol's channel. */
export function protocolNamespaceOf(channel) {
  return channel.slice(0, channel.indexOf(':'));
}

/** The namespaces of a resolved configuration, looked up by channel. */
export class Namespaces {
  /**
   * @param {{historySize: number, historyTtl: number, namespaces?: object[]}} config
   * @param {(config: object) => {get: (name: string) => Namespace|undefined}} [protocolNamespaces] the
   *   namespaces of the other protocols' channels (lib/wiring/ways-in.js), handed in
   *   by the wiring; without it such a channel is in no namespace
   */
  constructor(config, protocolNamespaces) {
    /** @type {Namespace} */
    this.top = resolve({ name: '' }, config);
    const list = config.namespaces ?? [];
    // No namespaces: every channel is top-level, and a look-up costs nothing.
    this.byName = list.length === 0 ? undefined : new Map(list.map((ns) => [ns.name, resolve(ns, config)]));
    // The channels of another protocol are in that protocol's namespaces.
    this.protocols = protocolNamespaces?.(config) ?? new Map();
  }

  /** @returns {Namespace|undefined} the channel's namespace; undefined: an unknown one */
  lookup(channel) {
    if (isProtocolChannel(channel)) return this.protocols.get(protocolNamespaceOf(channel));
    if (this.byName === undefined) return this.top;
    const colon = channel.indexOf(':');
    return colon === -1 ? this.top : this.byName.get(channel.slice(0, colon));
  }

  /** @returns {Namespace[]} the top level and every namespace */
  all() {
    return [this.top, ...(this.byName?.values() ?? [])];
  }

  /** @returns {Namespace} the channel's, or the top level's for one the workers would have refused */
  of(channel) {
    return this.lookup(channel) ?? this.top;
  }
}

function resolve(ns, { historySize, historyTtl }) {
  const out = { name: ns.name, historySize, historyTtl, clientPublish: true };
  for (const key of FALSE_BY_DEFAULT) out[key] = false;
  return Object.freeze(Object.assign(out, ns));
}
