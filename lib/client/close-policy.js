// What each close code asks of the client. Retrying is the default: a worker
// crash (1006), a drain (1001) or a restart (1012) all mean "come back".
import { CloseCode, ErrorCode } from '../core/errors.js';

/**
 * @typedef {object} ClosePolicy
 * @property {boolean} retry reconnect at all
 * @property {number} minAttempt backoff attempt to start from at least (a wider first window)
 * @property {string} [largest] code for the largest publish sent but not acked when the
 *   connection closed, when the close blames it; the others are `disconnected`
 * @property {boolean} [newToken] retry only with a new token (from getToken)
 */

const RETRY = Object.freeze({ retry: true, minAttempt: 0 });

const POLICIES = new Map([
  // Refused by policy (origin, per-IP cap): the same request would be refused
  // again, so reconnecting in a loop would only add load. The client stops.
  [CloseCode.POLICY, { retry: false, minAttempt: 0 }],
  // One of our frames was too big, and only a publish can be: the largest in
  // flight takes the blame. None is resent, so reconnecting does not repeat
  // the cause.
  [CloseCode.TOO_BIG, { retry: true, minAttempt: 0, largest: ErrorCode.PAYLOAD_TOO_LARGE }],
  // Slow consumer or over capacity: the gateway asks for room, so the first
  // window is 8x wider than after a crash.
  [CloseCode.TRY_AGAIN, { retry: true, minAttempt: 3 }],
  // No valid token in time, or disconnected by the operator: the same token
  // would meet the same end. The client stops and reports.
  [CloseCode.AUTH_TIMEOUT, { retry: false, minAttempt: 0 }],
  [CloseCode.DISCONNECTED, { retry: false, minAttempt: 0 }],
  // The token expired unrefreshed: come back at once with a fresh one.
  [CloseCode.TOKEN_EXPIRED, { retry: true, minAttempt: 0, newToken: true }]
]);

/** @returns {ClosePolicy} */
export function closePolicy(code) {
  return POLICIES.get(code) ?? RETRY;
}
