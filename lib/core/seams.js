// What the core needs from the layers above it, declared here: the core
// names no class of theirs, and whatever the wiring hands in (the worker's
// relay, subscriptions, presence, users, hooks) implements these. Types only.

/**
 * The worker's link to the primary and the engine (lib/worker/relay.js).
 * @typedef {object} Relay
 * @property {boolean} busy publishes are refused while the relay is congested
 * @property {boolean} unavailable publishes are refused while the engine cannot publish
 * @property {(publication: Publication) => Promise<PublishResult>} publish
 *   settles once the engine stored (or skipped) it
 * @property {(channel: string, query: object) => Promise<object>} history a channel's history, as the engine reads it
 * @property {(name: string, args: object) => Promise<any>} call a call on the whole cluster (./ipc.js Call)
 */

/**
 * The channels this worker holds (lib/session/subscriptions.js).
 * @typedef {object} Subscriptions
 * @property {(conn: object) => number} count channels one connection holds
 * @property {(conn: object, channel: string) => boolean} holds whether the connection holds it, live or joining
 * @property {(channel: string, since: {seq: number, epoch: string}|undefined, latest: boolean) => boolean} upToDate
 *   whether this worker can answer a subscribe itself, with nothing to replay
 */

/**
 * Presence reads (lib/session/presence.js).
 * @typedef {object} Presence
 * @property {(channel: string, stats: boolean) => Promise<object>} read the engine's presence (or presence_stats) answer
 */

/**
 * This worker's users (lib/session/users.js), under --auth jwt or hook.
 * @typedef {object} Users
 * @property {(user: string, code?: number, reason?: string) => number} disconnect closes the user's connections here
 */

/**
 * The application's subscribe and publish hooks (lib/session/hooks.js).
 * @typedef {object} Hooks
 * @property {((body: object, present: () => boolean) => Promise<true>)} [subscribe] rejects when the application refuses
 */

/**
 * A way in, as the session (lib/session/sessions.js) counts its connections
 * and joins them to channels.
 * @typedef {object} WayIn
 * @property {number} count its open connections
 * @property {number} opened its connections ever opened (how lib/worker/upgrade.js tells a handshake that completed)
 * @property {{added: () => void, closed: (reason: string) => void}} metrics its transport's (lib/session/metrics.js transportMetrics)
 * @property {{fanOut: (socket: object) => void, hold: (socket: object) => void}} coalescer the worker's write coalescer
 *   (lib/transport/coalesce.js), which its connections' writes go through
 * @property {typeof import('./session.js').Session} [Session] the class of its sessions, where it
 *   keeps fields of its own (a subclass of ./session.js's); else Session
 *
 * @typedef {object} JoinRequest
 * @property {{joined: (request: JoinRequest, answer: JoinAnswer) => void, joinRefused: (request: JoinRequest, err: Error) => void}} owner the way in
 * @property {object} conn the connection
 * @property {string} channel
 * @property {boolean} [latest] the channel's namespace keeps its latest message for new subscribers
 * @property {{seq: number, epoch: string}} [since] where a recovery starts
 * @property {string} [delta] the delta algorithm asked for
 * @property {Promise<void>} [wait] what must say yes first (a hook)
 * @property {{client: string, member: import('./identity.js').Member, maxUsers: number}} [presence] a member to admit under a cap
 *   of `maxUsers` users, in the same question as the route; the answer then carries the members (`clients`)
 * @property {boolean} [admitted] a presence entry was (or is being) admitted for it, taken out if it never goes live
 * @property {boolean} [companion] held beside another channel (lib/session/subscriptions.js)
 *
 * @typedef {object} JoinAnswer
 * @property {boolean} live the connection receives the channel now
 * @property {number} [seq] where the channel stands (absent when cancelled before the engine answered)
 * @property {string} [epoch]
 * @property {string} [result] a recovery's outcome
 * @property {string[]} [replay] the messages missed (or a `latest` namespace's latest)
 * @property {boolean} [recovered]
 * @property {Object<string, import('./identity.js').Member>} [clients] a join under a cap of members: the channel's members, as presence's list
 */

export {};

/**
 * A publish as the core hands it to the relay (and the engine keeps it), and
 * what the engine answers.
 * @typedef {object} Publication
 * @property {string} channel
 * @property {string} data the message, serialised (JSON)
 * @property {string} [exclude] a client id the live message is not delivered
 *   to (a Pusher client event's sender; the socket_id a Pusher HTTP API call
 *   names): no space in it. Not kept in the history: a replay (a recovery, a
 *   Pusher cache channel's last event on subscribe) reaches that client too
 * @property {string} [idempotencyKey] a retry with the same key on the same
 *   channel within the window publishes nothing (lib/engines/idempotency.js)
 * @property {number} [version] published only above the channel's last accepted version
 *
 * @typedef {object} PublishResult
 * @property {number} seq the publish's place in its channel's sequence; for a skipped one, the first publish's (duplicate) or where the channel stands (stale)
 * @property {string} epoch the sequence `seq` belongs to
 * @property {string | undefined} skipped 'duplicate' or 'stale' (Skipped in lib/protocol/outcomes.js): nothing was published
 */
