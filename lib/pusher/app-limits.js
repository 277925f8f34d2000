// A Pusher app's own limits (lib/pusher/apps.js APP_FIELDS), each answered as
// Pusher answers it: client events past the app's rate per connection,
// pusher:error 4301 (the command core's rate, set per app here); HTTP API
// events past the app's backend events per second, 429, counted exactly
// across workers by the primary and across nodes in Redis
// (lib/primary/app-rates.js, taken in lib/session/app-counts.js, as Ably's
// REST publishes are); an event's data past its size, 413; a batch or an
// event's channels past their counts, 400; a presence member's user_info
// past its size, subscription_error. The connection quota is counted where
// connections join their app (lib/session/app-counts.js).
import { kSession } from '../core/symbols.js';

const KB = 1024;

/** The command core's rate for a Pusher connection: its app's client events per second. */
export function clientEventRate(ws) {
  return ws[kSession].app.maxClientEventsPerSecond;
}

/** @returns {number} bytes an event's data may hold */
export function maxEventBytes(app) {
  return app.maxEventPayloadKb * KB;
}

/** @returns {number} bytes a presence member's user_info may hold, as JSON */
export function maxMemberInfoBytes(app) {
  return app.maxPresenceMemberInfoKb * KB;
}
