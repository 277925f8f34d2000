// The protocols the gateway speaks beside its own, as the wiring of every
// process attaches them: the namespaces of each one's channels (handed to
// lib/namespaces.js, in the workers and in the engine) and what each one
// runs in the primary beside the engine. A protocol's channels have names
// starting with '#' (isProtocolChannel in lib/namespaces.js). The workers'
// side of each protocol is listed in lib/worker/ways-in.js.
import { appNamespaces } from './pusher/channels.js';
import { publishMembers } from './pusher/members.js';
import { startPusherWebhooks } from './pusher/webhooks.js';

/**
 * Every protocol's namespaces for a configuration, by namespace name.
 * @returns {Map<string, import('./namespaces.js').Namespace>}
 */
export function protocolNamespaces(config) {
  return appNamespaces(config);
}

/**
 * Each protocol's part in the primary, beside the engine (Pusher: its
 * member events, its webhooks).
 * @param {object} options config, engine, relay, count (gateway_webhook_events_total), log
 * @returns {{close: () => Promise<void>}} sends what is still queued, briefly
 */
export function attachProtocols(options) {
  publishMembers(options.config, options.engine);
  const webhooks = startPusherWebhooks(options);
  return { close: async () => webhooks?.close() };
}
