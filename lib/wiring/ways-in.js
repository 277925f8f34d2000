// The protocols the gateway speaks beside its own: the one list of them, and
// what the wiring of every process takes from each. A protocol is a folder of
// lib/ that gives, here:
//   name                      what the admin page's calls name it by
//   namespaces(config, apps)  its channels' namespaces (for lib/core/namespaces.js,
//                             in the workers and in the engine); a protocol's
//                             channels start with '#' (isProtocolChannel)
//   primary(options)          its part in the primary beside the engine (options.appsServed:
//                             whether any app is configured), or
//                             undefined: {close()} sends what is still queued
//   worker(parts)             its ways in in a worker, or undefined: a WebSocket
//                             upgrade (its paths), HTTP routes, the admin page's view
//                             of the apps' channels (lib/native/admin-calls.js AppsAdmin)
//   webhookView               another protocol's view of its channels for the apps'
//                             webhooks (lib/pusher/webhooks.js WebhookView)
// A protocol with nothing configured (Pusher without an app) adds nothing.
import { Commands } from '../core/commands.js';
import { metrics } from '../session/metrics.js';
import { appNamespaces } from '../pusher/channels.js';
import { attachPusher } from '../pusher/primary.js';
import { servesPusher } from '../pusher/apps.js';
import { pusherWaysIn } from '../pusher/index.js';
import { ablyNamespaces, ablyWaysIn, ablyWebhookView, attachAbly } from '../ably/index.js';

const PROTOCOLS = [
  { name: 'pusher', namespaces: appNamespaces, primary: attachPusher, worker: pusherWaysIn },
  { name: 'ably', namespaces: ablyNamespaces, primary: attachAbly, worker: ablyWaysIn, webhookView: ablyWebhookView }
];

/**
 * Every protocol's namespaces, as the core's Namespaces asks for them (a
 * configuration's, by namespace name), for this process's apps: each
 * protocol names its own, so the first that knows a name answers.
 * @param {import('../pusher/apps.js').Apps} apps
 * @returns {(config: object) => {get: (name: string) => import('../core/namespaces.js').Namespace|undefined}}
 */
export function protocolNamespaces(apps) {
  return (config) => {
    const lookups = PROTOCOLS.map((protocol) => protocol.namespaces(config, apps));
    return {
      get(name) {
        for (const lookup of lookups) {
          const ns = lookup.get(name);
          if (ns !== undefined) return ns;
        }
        return undefined;
      }
    };
  };
}

/**
 * Each protocol's part in the primary, beside the engine.
 * @param {object} options config, apps, engine, relay, calls (a Call on the whole cluster), delivery (the webhooks' sender), log
 * @returns {{close: () => Promise<void>}} sends what is still queued, briefly
 */
export function attachProtocols(options) {
  const appsServed = servesPusher(options.config);
  const webhookViews = PROTOCOLS.map((protocol) => protocol.webhookView).filter((view) => view !== undefined);
  const parts = PROTOCOLS.map((protocol) => protocol.primary({ ...options, appsServed, webhookViews })).filter((part) => part !== undefined);
  return { close: async () => void (await Promise.all(parts.map((part) => part.close()))) };
}

/**
 * @param {object} worker the worker's parts: config, apps, appsServed (whether any app is configured), coalescer, relay, subscriptions, namespaces, presence, sessions, log
 * @returns {{name: string, upgrade: import('../worker/upgrade.js').UpgradeWay, route: {matches: Function, request: Function}, admin?: import('../native/admin-calls.js').AppsAdmin}[]}
 */
export function protocolWaysIn(worker) {
  const { config, relay, subscriptions, namespaces, presence } = worker;
  // A protocol's command core: its own names and rates (`own`) over the worker's one relay, subscriptions, namespaces and presence.
  const commandsFor = (own) => new Commands({ maxSubscriptions: config.maxSubscriptions, metrics, namespaces, relay, subscriptions, presence, ...own });
  return PROTOCOLS.map((protocol) => {
    const ways = protocol.worker({ ...worker, commandsFor });
    return ways === undefined ? undefined : { ...ways, name: protocol.name };
  }).filter((ways) => ways !== undefined);
}
