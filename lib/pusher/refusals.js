// Refusals as Pusher's clients understand them, from the error family's
// codes, each in one table. At the door: a browser cannot read the HTTP
// status of a failed upgrade, so the upgrade completes and the refusal comes
// as pusher:error and a close code whose range tells the client what to do
// (4100: back off; 4200: reconnect at once); the socket is never admitted: it
// counts nowhere. A subscription: pusher:subscription_error with a status and
// a type, which pusher-js hands to the application.
import { ErrorCode } from '../core/errors.js';
import { PusherCode, subscriptionError } from './frames.js';
import { closeWithError } from './transport.js';

const CODES = {
  [ErrorCode.DRAINING]: PusherCode.RECONNECT,
  [ErrorCode.OVER_CAPACITY]: PusherCode.OVER_CAPACITY,
  [ErrorCode.IP_CAP]: PusherCode.OVER_QUOTA,
  [ErrorCode.ORIGIN]: PusherCode.UNAUTHORIZED
};

/** @param {import('../core/errors.js').GatewayError} err the admission gate's refusal */
export function refuseUpgrade(wss, req, socket, head, err) {
  const code = CODES[err.code] ?? PusherCode.OVER_CAPACITY;
  wss.handleUpgrade(req, socket, head, (ws) => closeWithError(ws, code, err.message));
}

// code -> [status, type]; any other code is a SubscriptionError with its own HTTP status.
const SUBSCRIPTION = {
  [ErrorCode.UNAUTHORIZED]: [401, 'AuthError'], // a bad channel signature
  [ErrorCode.FORBIDDEN]: [403, 'AuthError'], // not allowed there (another user's channel, a namespace's rule)
  [ErrorCode.INVALID_CHANNEL]: [400, 'InvalidChannel'],
  [ErrorCode.BAD_REQUEST]: [400, 'InvalidChannelData'], // a presence member's channel_data
  [ErrorCode.TOO_MANY]: [403, 'LimitReached'] // the app's presence members
};

/**
 * @param {string} channel as the client named it
 * @param {import('../core/errors.js').GatewayError} err
 * @returns {string} the channel's pusher:subscription_error
 */
export function subscriptionRefused(channel, err) {
  const [status, type] = SUBSCRIPTION[err.code] ?? [err.status ?? 500, 'SubscriptionError'];
  return subscriptionError(channel, status, type, err.message);
}
