// What the gateway holds for one connection, whatever carries it (a native
// WebSocket in either encoding, an SSE stream, a Pusher WebSocket): one
// object under kSession on the connection, made once by
// lib/session/sessions.js begin(). Each field has one owner, the module
// that writes it; the others only read it.
//
// Idle connections are the gateway's bulk, so the record stays small (8
// bytes a field): no closure, no collection until one is needed (a second
// channel, a join that waits, a spent token), and every field set here, in
// this order, so every session of a way in shares one hidden class. A way
// in's own fields are a subclass's (lib/pusher/session.js).

export class Session {
  /**
   * @param {import('./seams.js').WayIn} way the way in that accepted the connection
   * @param {string} id the connection's id
   */
  constructor(way, id) {
    /** The way in that accepted the connection: it counts it, and hears how its joins end. */
    this.way = way;
    /**
     * The connection's id in the cluster: the welcome's connectionId, an SSE
     * stream's ready event, a Pusher socket_id; the `client` of hooks and
     * presence entries.
     */
    this.id = id;
    /**
     * Who the connection is, written by ./identity.js alone: undefined
     * before any credential, a marker while its first is checked, then
     * the admitted Identity.
     * @type {import('./identity.js').Identity|object|undefined}
     */
    this.identity = undefined;
    /**
     * The channels it holds, live or pending (lib/session/subscriptions.js):
     * undefined, one name, or a Set of names (a Set for one name costs ~150 bytes).
     * @type {string|Set<string>|undefined}
     */
    this.channels = undefined;
    /** How many of those a protocol holds beside one the client asked for: not counted toward --max-subscriptions. */
    this.companions = 0;
    /**
     * Its joins not live yet, by channel, only while one waits (lib/session/sessions.js).
     * @type {Map<string, import('./seams.js').JoinRequest>|undefined}
     */
    this.joining = undefined;
    /** Its slot in the keepalive wheel (lib/session/keepalive.js). */
    this.keepaliveSlot = -1;
    /** It showed life since its last ping (lib/session/keepalive.js). */
    this.alive = false;
    /** Its slot in the deadline wheel, -1 when it has no deadline (lib/session/deadlines.js). */
    this.deadlineSlot = -1;
    /**
     * Under --refresh-hook: the end (ms since 1970) of the identity a
     * refresh is asked ahead of (lib/session/expiry.js).
     * @type {number|undefined}
     */
    this.expiresAt = undefined;
    /**
     * The IP it is counted under (lib/session/admission.js): null when no
     * per-IP cap counts it.
     * @type {string|null}
     */
    this.ip = null;
    /**
     * Its tokens for the commands that cost (./commands.js, step 6), from its first spend.
     * @type {import('./token-bucket.js').TokenBucket|undefined}
     */
    this.commandTokens = undefined;
    /**
     * Its tokens for credentials presented after the first (a native `auth`
     * frame), from its second.
     * @type {import('./token-bucket.js').TokenBucket|undefined}
     */
    this.credentialTokens = undefined;
  }
}
