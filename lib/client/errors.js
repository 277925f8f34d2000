// Errors the client raises itself. Errors the gateway reports arrive as the
// gateway's own GatewayError (codes in ErrorCode); both are of one family and
// carry `.code`, so callers branch on the code alone.
import { GatewayError } from '../core/errors.js';

export const ClientErrorCode = Object.freeze({
  QUEUE_FULL: 'queue_full', // publish while disconnected, with maxQueued already waiting
  DISCONNECTED: 'disconnected', // sent, but the connection died before the ack: may or may not be published
  CLOSED: 'closed', // close() was called, or the gateway refused us for good (1008)
  RECEIVE_ONLY: 'receive_only', // publish over SSE: publish through the application's server and POST /publish
  BAD_DELTA: 'bad_delta' // a delta did not apply (the client reconnects and recovers), or deltas cannot be loaded
});

export class ClientError extends GatewayError {
  /** @param {number} [closeCode] with `closed`: the close code the gateway ended the client with */
  constructor(code, message, closeCode) {
    super(code, message);
    this.gatewayCloseCode = closeCode;
  }

  get closeCode() {
    return this.gatewayCloseCode;
  }
}
