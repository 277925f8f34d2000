// pusher:subscribe and pusher:unsubscribe. A subscribe checks the name, then
// the signature for private and presence channels (which grants the channel;
// on a presence channel its channel_data's user and info are the member
// presence shows), then the core's checks, then the session's join; a
// refusal is the channel's pusher:subscription_error and nothing else. A
// channel already held is answered again. `edge` is the way in
// (./connection.js): its relay, subscriptions, sessions, core and presence.
import { GatewayError, ErrorCode } from '../core/errors.js';
import { grantChannel, memberOf, revokeChannel } from '../core/identity.js';
import { kSession } from '../core/symbols.js';
import { MAX_USER_LENGTH } from '../protocol/limits.js';
import { checkName, internalName, isCached, isPresence, isSigned, isValidName, Kind, kindOf, membersChannel, userOfChannel } from './channels.js';
import { subscriptionRefused } from './refusals.js';
import { ownUserChannel, signinEnded } from './signin.js';
import { authMatches } from './signatures.js';
import { maxMemberInfoBytes } from './app-limits.js';
import { cacheMiss, eventFrame, subscriptionSucceeded } from './frames.js';
import { presenceData } from './presence-data.js';
import { countChanged, webhookEvent } from './reports.js';

/** @param {import('./connection.js').PusherConnections} edge */
export function subscribe(edge, ws, { channel: name, auth, channel_data: channelData }) {
  if (typeof name !== 'string') throw new GatewayError(ErrorCode.BAD_REQUEST, 'pusher:subscribe needs a channel');
  try {
    join(edge, ws, name, auth, channelData);
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    ws.send(subscriptionRefused(name.slice(0, 200), err));
  }
}

function join(edge, ws, name, auth, channelData) {
  const user = userOfChannel(name);
  if (user !== undefined) {
    // A signed-in connection already holds its user's channel (signin() joined it).
    if (user === ws[kSession].signedIn) return ownUserChannel(edge, ws, name);
    throw new GatewayError(ErrorCode.FORBIDDEN, 'sign in as this user first (pusher:signin)');
  }
  checkName(name);
  const { app, id: socketId } = ws[kSession];
  const kind = kindOf(name);
  const internal = internalName(app.appId, name, kind);
  const held = edge.sessions.held(ws, internal);
  if (held !== undefined) {
    // Pusher answers a subscribe once: a join under way is answered when it ends.
    if (held.live) succeeded(edge, ws, internal, name, kind);
    return;
  }
  let member;
  if (isSigned(kind)) {
    const signed = isPresence(kind) ? `${socketId}:${name}:${channelData}` : `${socketId}:${name}`;
    if (!authMatches(app, signed, auth)) throw new GatewayError(ErrorCode.UNAUTHORIZED, `invalid signature for ${socketId} on ${name}`);
    if (isPresence(kind)) member = channelMember(channelData, maxMemberInfoBytes(app));
    // And client events there, but on an encrypted channel, where Pusher allows none.
    grantChannel(ws, internal, kind !== Kind.ENCRYPTED);
  }
  let ns;
  try {
    ns = edge.commands.subscribe(ws, internal, undefined, undefined);
  } catch (err) {
    revokeChannel(ws, internal);
    throw err;
  }
  const request = { owner: edge, conn: ws, channel: internal, latest: ns.latest, name, kind };
  if (member === undefined) return edge.sessions.join(request);
  // The member events' channel first, so those published once the members
  // are read reach this connection; it is held beside the channel and not
  // counted. The channel itself is one question to the primary: the member
  // admitted under the app's cap where the entries live, the members read,
  // the channel routed (lib/primary/presence.js).
  const members = membersChannel(internal);
  edge.sessions.join({ owner: edge, conn: ws, channel: members, latest: edge.commands.namespace(members).latest, companion: true });
  (ws[kSession].presenceUsers ??= new Map()).set(internal, member.user);
  request.presence = edge.presence.member(ws, app.maxPresenceMembers, member);
  request.admitted = true;
  edge.sessions.join(request);
}

/** Where a join ended (lib/session/sessions.js): a live channel the client named is answered, with its members when the join read them. */
export function answerJoin(edge, { conn: ws, channel: internal, name, kind, signin }, { live, replay, clients }) {
  if (signin !== undefined) return signinEnded(edge, ws, signin, live);
  if (live && name !== undefined) succeeded(edge, ws, internal, name, kind, replay, clients);
}

/** The presence cap (or the engine) refused a join: the grant and the member events' channel go too. */
export function refuseJoin(edge, { conn: ws, channel: internal, name, presence, signin }, err) {
  if (signin !== undefined) return signinEnded(edge, ws, signin, false, err);
  revokeChannel(ws, internal);
  ws[kSession].presenceUsers?.delete(internal);
  edge.sessions.leave(ws, membersChannel(internal), true);
  const full = err.code === ErrorCode.TOO_MANY && presence !== undefined;
  if (edge.isOpen(ws)) ws.send(subscriptionRefused(name, full ? new GatewayError(ErrorCode.TOO_MANY, `${name} has its ${presence.maxUsers} members`) : err));
}

/** pusher:unsubscribe: leaving is always allowed; an unknown channel is nothing to leave. */
export function unsubscribe(edge, ws, { channel: name }) {
  if (!isValidName(name)) return; // a user's channel included: it is held as long as the sign-in
  const internal = internalName(ws[kSession].app.appId, name);
  if (edge.subscriptions.holds(ws, internal)) countChanged(edge.relay, ws, internal, name);
  edge.commands.unsubscribe(ws, internal);
  edge.sessions.leave(ws, internal);
  if (isPresence(kindOf(name))) {
    edge.sessions.leave(ws, membersChannel(internal), true);
    ws[kSession].presenceUsers?.delete(internal);
  }
  revokeChannel(ws, internal);
}

/**
 * subscription_succeeded, with the members on a presence channel; on a
 * cache channel then its last event, or cache_miss.
 * @param {string[]} [replay] a cache channel's last event, as the engine holds it
 * @param {Object<string, import('../core/identity.js').Member>} [clients] a presence channel's entries, read with the join; a channel held already reads them now
 */
function succeeded(edge, ws, internal, name, kind, replay, clients) {
  if (!isPresence(kind)) return sendSucceeded(edge, ws, internal, name, kind, '{}', replay);
  if (clients !== undefined) return sendSucceeded(edge, ws, internal, name, kind, presenceData(clients), replay);
  edge.presence.read(internal, false).then(
    ({ clients }) => sendSucceeded(edge, ws, internal, name, kind, presenceData(clients), replay),
    (err) => edge.isOpen(ws) && ws.send(subscriptionRefused(name, err))
  );
}

function sendSucceeded(edge, ws, internal, name, kind, dataText, replay) {
  if (!edge.isOpen(ws) || !edge.subscriptions.holds(ws, internal)) return; // left while the members were read
  ws.send(subscriptionSucceeded(name, dataText));
  countChanged(edge.relay, ws, internal, name);
  if (!isCached(kind)) return;
  if (replay === undefined || replay.length === 0) {
    ws.send(cacheMiss(name));
    return webhookEvent(edge.relay, ws, internal, { name: 'cache_miss', channel: name });
  }
  ws.send(eventFrame(name, replay[replay.length - 1]));
}

/**
 * @param {number} maxInfo bytes of user_info (the app's limit)
 * @returns {import('../core/identity.js').Member} a presence subscription's member
 * @throws {GatewayError} BAD_REQUEST: what is wrong with its channel_data
 */
function channelMember(channelData, maxInfo) {
  const bad = (message) => new GatewayError(ErrorCode.BAD_REQUEST, message);
  if (typeof channelData !== 'string') throw bad('channel_data is required on a presence channel');
  // Bounded before it is parsed: the info, its user_id and the JSON around them.
  if (Buffer.byteLength(channelData) > maxInfo + MAX_USER_LENGTH + 64) throw bad(`channel_data is over ${maxInfo} bytes of user_info`);
  let parsed;
  try {
    parsed = JSON.parse(channelData);
  } catch {
    throw bad('channel_data is not JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw bad('channel_data must be a JSON object');
  const id = parsed.user_id;
  if ((typeof id !== 'string' && typeof id !== 'number') || String(id) === '' || String(id).length > MAX_USER_LENGTH) {
    throw bad(`channel_data needs a user_id (a string or number of 1 to ${MAX_USER_LENGTH} characters)`);
  }
  if (parsed.user_info !== undefined && Buffer.byteLength(JSON.stringify(parsed.user_info)) > maxInfo) throw bad(`user_info is over ${maxInfo} bytes`);
  return memberOf(String(id), parsed.user_info);
}
