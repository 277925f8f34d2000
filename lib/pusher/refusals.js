// A refusal at the door, as Pusher's clients understand it: a browser cannot
// read the HTTP status of a failed upgrade, so the upgrade completes and the
// refusal comes as pusher:error and a close code whose range tells the
// client what to do (4100: back off; 4200: reconnect at once). The socket
// is never admitted: it counts nowhere.
import { ErrorCode } from '../core/errors.js';
import { PusherCode } from './frames.js';
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
