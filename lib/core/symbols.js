// The private keys the gateway hangs on objects it does not own (a ws
// WebSocket, a net.Socket, ws's Receiver) or that another layer owns: every
// module reads them from here, so a reader finds every one in one list.
// What a connection holds is not among them: it is one Session
// (./session.js), under kSession.

/** The connection's session (./session.js): everything the gateway keeps for it. */
export const kSession = Symbol('session');

/** The connection's transport descriptor (lib/transport/transport.js), on its prototype. */
export const kTransport = Symbol('transport');

/** The client's IP, on a socket the primary handed over (lib/session/client-ip.js). */
export const kClientIp = Symbol('clientIp');

/** The connection a socket carries (an SSE stream's), so the server's clientError handler writes nothing into it. */
export const kCarries = Symbol('carries');

/** The socket a paced close belongs to, on its ws Receiver (lib/transport/close-pacer.js). */
export const kPacedSocket = Symbol('pacedSocket');

/** A socket whose chunk or answered close waits in the close pacer: reading stopped for the pacer's own reason. */
export const kPacerWaiting = Symbol('pacerWaiting');

/** A socket whose reading the close pacer's pause stopped. */
export const kPacerPaused = Symbol('pacerPaused');
