// What a Pusher connection's activity tells the primary, where it is handled
// once for the cluster: a channel's subscribers changed (its count, for an
// app that follows counts: ./subscription-count.js), and an event for the
// app's webhooks (./webhooks.js).
import { Op } from '../core/ipc.js';
import { kSession } from '../core/symbols.js';
import { countsSubscriptions, hasCount } from './subscription-count.js';

/** The channel's subscribers changed: the primary tells its count, if its app follows counts. */
export function countChanged(relay, ws, internal, name) {
  if (countsSubscriptions(ws[kSession].app) && hasCount(name)) relay.send([Op.SUBSCRIPTIONS_CHANGED, internal]);
}

/** An event for the app's webhooks, which the primary sends. */
export function webhookEvent(relay, ws, internal, event) {
  if (ws[kSession].app.webhooks.length > 0) relay.send([Op.PROTOCOL_WEBHOOK, internal, event]);
}
