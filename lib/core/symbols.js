// The private keys the gateway hangs on objects it does not own (a ws
// WebSocket, an SSE response): every module reads them from here, so a
// reader finds every piece of per-connection state in one list.

/** The connection's transport descriptor (lib/worker/transport.js), on its prototype. */
export const kTransport = Symbol('transport');
