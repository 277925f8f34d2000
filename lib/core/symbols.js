// The private keys the gateway hangs on objects it does not own (a ws
// WebSocket, an SSE response): every module reads them from here, so a
// reader finds every piece of per-connection state in one list.

/** The connection's transport descriptor (lib/transport/transport.js), on its prototype. */
export const kTransport = Symbol('transport');

/** The connection a socket carries (an SSE stream's), so the server's clientError handler writes nothing into it. */
export const kCarries = Symbol('carries');

/** A connection's channels (lib/session/subscriptions.js). */
export const kChannels = Symbol('channels');

/** A connection's companion subscriptions (lib/session/subscriptions.js). */
export const kCompanions = Symbol('companions');

/** The socket a paced close belongs to (lib/transport/close-pacer.js). */
export const kPacedSocket = Symbol('pacedSocket');

/** A socket whose chunk or answered close waits in the close pacer: reading stopped for the pacer's own reason. */
export const kPacerWaiting = Symbol('pacerWaiting');

/** A socket whose reading the close pacer's pause stopped. */
export const kPacerPaused = Symbol('pacerPaused');

/** Under --refresh-hook: the end of an identity the refresh is ahead of (lib/session/expiry.js). */
export const kExpiresAt = Symbol('expiresAt');

/** The IP whose place in the primary's count a connection holds (lib/session/admission.js). */
export const kReservedIp = Symbol('reservedIp');

/** The IP a connection is counted under in its worker (lib/session/ip-counts.js). */
export const kCountedIp = Symbol('countedIp');

/** A connection's slot in the keepalive wheel (lib/session/keepalive.js). */
export const kKeepaliveSlot = Symbol('keepaliveSlot');

/** A connection answered the last ping (lib/session/keepalive.js). */
export const kAlive = Symbol('alive');

/** A connection's slot in the deadline wheel (lib/session/deadlines.js). */
export const kDeadlineSlot = Symbol('deadlineSlot');

/** A connection's tokens for the commands that cost (./commands.js, step 6). */
export const kTokens = Symbol('tokens');

/** When those tokens were last counted. */
export const kTokensRefilledAt = Symbol('tokensRefilledAt');

/** A connection's identity (./identity.js). */
export const kIdentity = Symbol('identity');
