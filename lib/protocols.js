// The protocols the gateway speaks beside its own, as the processes that do
// not run their ways in (the primary, the engines) need them: the channels
// each one owns, and what each one runs in the primary beside the engine. A protocol's channels have names starting with '#', which
// no native name can spell, and namespaces of the protocol's own making.
// The workers' side of each protocol is listed in lib/worker/ways-in.js.
import { appNamespaces } from './pusher/channels.js';
import { publishMembers } from './pusher/members.js';
import { startPusherWebhooks } from './pusher/webhooks.js';
import { followSubscriptionCounts } from './pusher/subscription-count.js';
import { servesPusher } from './pusher/apps.js';

const HASH = 0x23; // '#'

/** The `app` label of the native protocol's traffic in the metrics; another protocol's app is labelled by its id. */
export const NATIVE_APP = 'native';

/** @returns {boolean} whether `channel` belongs to another protocol (native clients never see it) */
export function isProtocolChannel(channel) {
  return channel.charCodeAt(0) === HASH;
}

/**
 * Every protocol's namespaces for a configuration, by namespace name.
 * @returns {Map<string, import('./namespaces.js').Namespace>}
 */
export function protocolNamespaces(config) {
  return appNamespaces(config);
}

/**
 * Each protocol's part in the primary, beside the engine (Pusher: its
 * member events, its webhooks, its subscription counts).
 * @param {object} options config, engine, relay, calls (a Call on the whole cluster), count (gateway_webhook_events_total), log
 * @returns {{close: () => Promise<void>}} sends what is still queued, briefly
 */
export function attachProtocols(options) {
  if (!servesPusher(options.config)) return { close: async () => {} };
  publishMembers(options.engine);
  const webhooks = startPusherWebhooks(options);
  const counts = followSubscriptionCounts({ relay: options.relay, calls: options.calls, webhooks });
  return {
    close: async () => {
      counts.stop();
      await webhooks.close();
    }
  };
}
