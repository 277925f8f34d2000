// Pusher's protocol in the primary, beside the engine: its member events,
// its webhooks and its subscription counts. Without an app, nothing.
import { publishMembers } from './members.js';
import { startPusherWebhooks } from './webhooks.js';
import { followSubscriptionCounts } from './subscription-count.js';

/**
 * @param {object} options config, apps, appsServed, webhookViews (the other protocols' channels for the apps' webhooks), engine, relay, calls (a Call on the whole cluster), delivery (the webhooks' sender), log
 * @returns {{close: () => Promise<void>}|undefined} sends what is still queued, briefly; none without an app
 */
export function attachPusher(options) {
  if (!options.appsServed) return undefined;
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
