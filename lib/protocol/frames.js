// The frames the gateway sends a native client, as JSON text: the one place
// their shapes are written (the MessagePack transport re-encodes this text,
// ../transport/msgpack-transport.js). `message` frames are built from
// already-serialised data so a publish is serialised once, however many
// workers and subscribers it reaches; channel names are validated
// (./validate.js) to need no escaping. No imports: the load generator and
// the tests build the same frames.

/** @param {string} [auth] 'jwt' when a token is required; left out otherwise */
export function welcomeFrame(connectionId, worker, pingInterval, auth) {
  return JSON.stringify({ type: 'welcome', connectionId, worker, pingInterval, auth });
}

export function ackFrame(id) {
  return id === undefined ? '{"type":"ack"}' : JSON.stringify({ type: 'ack', id });
}

/** The ack of a publish the engine has stored: its place in the channel's sequence. */
export function publishAckFrame(id, seq, epoch) {
  return JSON.stringify({ type: 'ack', id, seq, epoch });
}

/**
 * The ack of a subscribe: where the channel stands (`seq`, `epoch`), so the
 * client knows where to resume from, and for a subscribe with `since`
 * whether the missed messages follow (`recovered`); in a `latest` namespace,
 * `latest: true` when the channel's latest message (seq `seq`) follows.
 */
export function subscribeAckFrame(id, seq, epoch, recovered, latest) {
  return JSON.stringify({ type: 'ack', id, seq, epoch, recovered, latest });
}

/**
 * A subscription the server made (the token's `channels`, the server API's
 * subscribe): announced like a subscribe's ack, with the channel named.
 */
export function subscribedFrame(channel, seq, epoch, recovered, latest) {
  return JSON.stringify({ type: 'subscribed', channel, seq, epoch, recovered, latest });
}

/** The server API ended a subscription. */
export function unsubscribedFrame(channel) {
  return `{"type":"unsubscribed","channel":"${channel}"}`;
}

/** The ack of an `auth` frame: who the token says, and when it expires (ms). */
export function authAckFrame(id, user, expiresAt) {
  return JSON.stringify({ type: 'ack', id, user, expiresAt });
}

/** A presence answer; `clients` {client: {user, info}} (lib/core/identity.js's Member). */
export function presenceFrame(id, channel, clients) {
  return JSON.stringify({ type: 'presence', id, channel, clients });
}

/**
 * Who came and went in a channel since its last diff (Phoenix's shape):
 * `joinsJson` and `leavesJson` the JSON of {client: {user, info}}, as the
 * engine encoded them once; a client is in one of them at most. A member
 * list is a presence read with every later diff applied.
 */
export function presenceDiffFrame(channel, joinsJson, leavesJson) {
  return `{"type":"presence_diff","channel":"${channel}","joins":${joinsJson},"leaves":${leavesJson}}`;
}

/**
 * A presence_stats answer: clients in the channel, distinct users among them,
 * and the digest of the client ids (./presence-hash.js), so a client holding
 * a member list learns in O(1) whether it matches.
 */
export function presenceStatsFrame(id, channel, clients, users, digest) {
  return JSON.stringify({ type: 'presence_stats', id, channel, clients, users, digest });
}

export function pongFrame(id) {
  return id === undefined ? '{"type":"pong"}' : JSON.stringify({ type: 'pong', id });
}

export function errorFrame(code, message, id) {
  return JSON.stringify({ type: 'error', id, code, message });
}

export function messageFrame(channel, seq, dataJson) {
  return `{"type":"message","channel":"${channel}","seq":${seq},"data":${dataJson}}`;
}

/**
 * A message as a fossil delta of its data's JSON text (UTF-8) against the
 * previous message's; the delta's bytes as a string of one character per
 * byte (U+0000 to U+00FF), which JSON carries exactly.
 * @param {Uint8Array} delta
 */
export function deltaFrame(channel, seq, delta) {
  return `{"type":"message","channel":"${channel}","seq":${seq},"delta":true,"data":${JSON.stringify(Buffer.from(delta.buffer, delta.byteOffset, delta.byteLength).toString('latin1'))}}`;
}
