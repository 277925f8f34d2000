// Errors the client raises itself. Errors the gateway reports arrive as the
// protocol's ProtocolError (codes in ErrorCode); both carry `.code`, so
// callers branch on the code alone.

export const ClientErrorCode = Object.freeze({
  QUEUE_FULL: 'queue_full', // publish while disconnected, with maxQueued already waiting
  DISCONNECTED: 'disconnected', // sent, but the connection died before the ack: may or may not be published
  CLOSED: 'closed', // close() was called, or the gateway refused us for good (1008)
  RECEIVE_ONLY: 'receive_only' // publish over SSE: publish through the application's server and POST /publish
});

export class ClientError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'ClientError';
    this.code = code;
  }
}
