// The protocols the gateway speaks beside its own, as the wiring of every
// process attaches them: the namespaces of each one's channels (handed to
// lib/core/namespaces.js, in the workers and in the engine) and what each one
// runs in the primary beside the engine. A protocol's channels have names
// starting with '#' (isProtocolChannel in lib/core/namespaces.js). The workers'
// side of each protocol is listed in lib/worker/ways-in.js.
import { appNamespaces } from '../pusher/channels.js';
import { publishMembers } from '../pusher/members.js';
import { startPusherWebhooks } from '../pusher/webhooks.js';
import { followSubscriptionCounts } from '../pusher/subscription-count.js';
import { servesPusher } from '../pusher/apps.js';

/**
 * Every protocol's namespaces, as the core's Namespaces asks for them (a
 * configuration's, by namespace name), for this process's apps.
 * @param {import('../pusher/apps.js').Apps} apps
 * @returns {(config: object) => Map<string, import('../core/namespaces.js').Namespace>}
 */
export function protocolNamespaces(apps) {
  return (config) => appNamespaces(config, apps);
}

/**
 * Each protocol's part in the primary, beside the engine (Pusher: its
 * member events, its webhooks, its subscription counts).
 * @param {object} options config, apps, engine, relay, calls (a Call on the whole cluster), delivery (the webhooks' sender), log
 * @returns {{close: () => Promise<void>}} sends what is still queued, briefly
 */
export function attachProtocols(options) {
  if (!servesPusher(options.config)) return { close: async () => {} };
  publishMembers(options.engine);
  const webhooks = startPusherWebhooks(options);
  const counts = followSubscriptionCounts({ relay: options.relay, engine: options.engine, calls: options.calls, webhooks, apps: options.apps });
  return {
    close: async () => {
      counts.stop();
      await webhooks.close();
    }
  };
}
