// The Pusher WebSocket way in (/app/<key>): Pusher's frames decoded into the
// command core (lib/core/commands.js) and its answers encoded back as
// Pusher's. A connection is counted, kept alive and drained like a native
// one (lib/session/sessions.js); what is Pusher's own is its socket_id, its
// app, and the signatures that grant its private and presence channels.
//
// A connection's identity (lib/core/identity.js) starts as its app's:
// no user, its app's public and cache channels open to it, nothing to
// publish. A valid channel signature adds that channel to its grants (and
// the right to send client events there); a presence subscription makes its
// channel_data's user the one presence shows. Handlers are created once per
// worker and read the connection from `this`.
import { randomInt } from 'node:crypto';
import { ErrorCode, GatewayError } from '../core/errors.js';
import { Keepalive } from '../session/keepalive.js';
import { socketListeners } from '../transport/ws-handlers.js';
import { grantChannel, identify, identityOf, revokeChannel } from '../core/identity.js';
import { kSession } from '../core/symbols.js';
import { transportMetrics, metrics } from '../session/metrics.js';
import { MAX_USER_LENGTH } from '../protocol/limits.js';
import { Op } from '../core/ipc.js';
import {
  checkName,
  clientName,
  internalName,
  isOwn,
  isPresence,
  isSigned,
  isValidName,
  Kind,
  kindOf,
  MAX_USER_ID_BYTES,
  membersChannel,
  publicPrefixes,
  userChannel,
  userOfChannel
} from './channels.js';
import { authMatches } from './signatures.js';
import { AppConnections } from './app-connections.js';
import { PusherSession } from './session.js';
import { closeWithError } from './transport.js';
import { maxEventBytes, maxMemberInfoBytes } from './app-limits.js';
import { countsSubscriptions, hasCount } from './subscription-count.js';
import {
  cacheMiss,
  connectionEstablished,
  dataObject,
  errorFrame,
  eventData,
  eventFrame,
  parseFrame,
  PONG,
  PusherCode,
  signinSuccess,
  subscriptionError,
  subscriptionSucceeded
} from './frames.js';

const PROTOCOLS = new Set(['5', '6', '7']);
const PROTOCOL = /[?&]protocol=([^&]*)/;
const NOTHING = Object.freeze({ any: false, exact: new Set(), prefixes: [], templates: [] });

export class PusherConnections {
  /**
   * @param {object} options
   * @param {number} options.pingInterval --ping-interval: ms between two pings, told to clients as Pusher's activity_timeout
   * @param {import('./apps.js').Apps} options.apps
   * @param {import('../worker/relay.js').WorkerRelay} options.relay
   * @param {import('../session/subscriptions.js').Subscriptions} options.subscriptions
   * @param {import('../session/sessions.js').Sessions} options.sessions
   * @param {import('../core/commands.js').Commands} options.commands Pusher's core: its names, Pusher's client event rate
   * @param {import('../session/presence.js').WorkerPresence} options.presence
   * @param {import('pino').Logger} options.log
   */
  constructor({ pingInterval, apps, relay, subscriptions, sessions, commands, presence, log }) {
    this.apps = apps;
    this.relay = relay;
    this.subscriptions = subscriptions;
    this.sessions = sessions;
    this.commands = commands;
    this.presence = presence;
    this.activityTimeout = Math.max(1, Math.round(pingInterval / 1000));
    this.count = 0; // open connections (counted by the session, lib/session/sessions.js)
    this.opened = 0; // ever accepted: how lib/worker/upgrade.js tells a handshake that completed
    this.metrics = transportMetrics('ws', 'pusher');
    this.Session = PusherSession; // its connections' sessions hold their app and signed-in user
    // socket_ids: `<this process's random number>.<a count>`, unique across workers and nodes.
    this.idPrefix = `${randomInt(1, 2 ** 47)}.`;
    this.nextId = 0;
    this.identities = new Map(); // appId -> the identity its connections start with
    this.byApp = new AppConnections(apps, relay);
    apps.on('change', (app, previous) => app === undefined && this.identities.delete(previous.appId));
    this.listen = socketListeners(this, log, 'pusher');
  }

  /** A WebSocket on /app/<key> just upgraded: established, or told why not and closed. */
  accept(ws, ip, req) {
    this.listen(ws);
    // The socket_id is the connection's id everywhere (presence entries, the fan-out's exclusion).
    this.sessions.begin(ws, this, `${this.idPrefix}${this.nextId++}`);
    this.sessions.opened(ws, ip);
    // Read by hand: a URL object per handshake costs more than the rest of the path's parsing.
    const query = req.url.indexOf('?');
    const app = this.apps.byKey.get(req.url.slice(5, query === -1 ? undefined : query));
    const protocol = query === -1 ? null : (PROTOCOL.exec(req.url.slice(query))?.[1] ?? null);
    if (app === undefined) return closeWithError(ws, PusherCode.APP_NOT_FOUND, 'no app with this key');
    if (protocol === null) return closeWithError(ws, PusherCode.NO_PROTOCOL, 'no protocol version given: connect with ?protocol=7');
    if (!PROTOCOLS.has(protocol)) return closeWithError(ws, PusherCode.UNSUPPORTED_PROTOCOL, `protocol ${protocol.slice(0, 16)} is not supported: 5 to 7 are`);
    if (!app.enabled) return closeWithError(ws, PusherCode.APP_DISABLED, 'the app is disabled');
    const admitted = this.byApp.admit(app);
    if (admitted === true) return this.established(ws, app);
    admitted.then((allowed) => {
      if (!allowed) return closeWithError(ws, PusherCode.OVER_QUOTA, `the app has its ${app.maxConnections} connections`);
      if (!this.isOpen(ws)) return this.byApp.release(app);
      this.established(ws, app);
    });
  }

  established(ws, app) {
    this.byApp.add(ws, app);
    identify(ws, this.identityOf(app));
    ws.send(connectionEstablished(ws[kSession].id, this.activityTimeout));
  }

  message(ws, data, isBinary) {
    Keepalive.alive(ws);
    if (ws[kSession].app === null) return; // refused, closing
    try {
      if (isBinary) throw new GatewayError(ErrorCode.BAD_REQUEST, 'binary frames are not accepted; send JSON text');
      this.run(ws, parseFrame(data.toString()));
    } catch (err) {
      this.fail(ws, err);
    }
  }

  run(ws, frame) {
    switch (frame.event) {
      case 'pusher:ping':
        return ws.send(PONG);
      case 'pusher:pong':
        return;
      case 'pusher:subscribe':
        return this.subscribe(ws, dataObject(frame));
      case 'pusher:unsubscribe':
        return this.unsubscribe(ws, dataObject(frame));
      case 'pusher:signin':
        return this.signin(ws, dataObject(frame));
    }
    if (frame.event.startsWith('client-')) return this.clientEvent(ws, frame);
    throw new GatewayError(ErrorCode.BAD_REQUEST, `unknown event ${JSON.stringify(frame.event.slice(0, 64))}`);
  }

  /**
   * pusher:subscribe: the name, then the signature for private and presence
   * channels (which grants the channel), then the core's checks, then the
   * session's join; a refusal is the channel's pusher:subscription_error
   * and nothing else. A channel already held is answered again.
   */
  subscribe(ws, { channel: name, auth, channel_data: channelData }) {
    if (typeof name !== 'string') throw new GatewayError(ErrorCode.BAD_REQUEST, 'pusher:subscribe needs a channel');
    const user = userOfChannel(name);
    if (user !== undefined) {
      // A signed-in connection already holds its user's channel (signin() joined it).
      if (user === ws[kSession].signedIn) return void ws.send(subscriptionSucceeded(name));
      return void ws.send(subscriptionError(name, 403, 'AuthError', 'sign in as this user first (pusher:signin)'));
    }
    if (!isValidName(name)) return void ws.send(subscriptionError(name.slice(0, 200), 400, 'InvalidChannel', checkNameMessage(name)));
    const { app, id: socketId } = ws[kSession];
    const kind = kindOf(name);
    const internal = internalName(app.appId, name);
    if (this.subscriptions.has(ws, internal)) {
      // Live: answered again; still joining: its one answer is on its way.
      if (this.subscriptions.channel(internal).has(ws)) this.succeeded(ws, internal, name);
      return;
    }
    let member;
    if (isSigned(kind)) {
      const signed = isPresence(kind) ? `${socketId}:${name}:${channelData}` : `${socketId}:${name}`;
      if (!authMatches(app, signed, auth)) return void ws.send(subscriptionError(name, 401, 'AuthError', `invalid signature for ${socketId} on ${name}`));
      if (isPresence(kind)) {
        member = memberOf(channelData, maxMemberInfoBytes(app));
        if (typeof member === 'string') return void ws.send(subscriptionError(name, 400, 'InvalidChannelData', member));
      }
      // And client events there, but on an encrypted channel, where Pusher allows none.
      grantChannel(ws, internal, kind !== Kind.ENCRYPTED, member);
    }
    let ns;
    try {
      ns = this.commands.subscribe(ws, internal, undefined, undefined);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      revokeChannel(ws, internal);
      return void ws.send(subscriptionError(name, err.status, 'SubscriptionError', err.message));
    }
    const request = { owner: this, conn: ws, channel: internal, latest: ns.latest, name };
    if (member === undefined) return this.sessions.join(request);
    // The member events' channel first, so those published once the members
    // are read reach this connection; it is held beside the channel and
    // not counted. The channel itself waits for the engine to admit the
    // member under the app's cap, in one step where the entries live.
    const members = membersChannel(internal);
    this.sessions.join({ owner: this, conn: ws, channel: members, latest: this.commands.namespace(members).latest, companion: true });
    const max = app.maxPresenceMembers;
    request.admitted = true;
    request.wait = this.presence.admit(ws, internal, max).then((added) => {
      if (!added) throw new GatewayError(ErrorCode.TOO_MANY, `${name} has its ${max} members`);
    });
    this.sessions.join(request);
  }

  /** Where a join ended (lib/session/sessions.js): a live channel the client named is answered. */
  joined({ conn: ws, channel: internal, name }, { live, replay }) {
    if (live && name !== undefined) this.succeeded(ws, internal, name, replay);
  }

  /** The presence cap (or the engine) refused a join: the grant and the member events' channel go too. */
  joinRefused({ conn: ws, channel: internal, name }, err) {
    revokeChannel(ws, internal);
    this.sessions.leave(ws, membersChannel(internal), true);
    if (!this.isOpen(ws)) return;
    const full = err.code === ErrorCode.TOO_MANY;
    ws.send(subscriptionError(name, full ? 403 : (err.status ?? 500), full ? 'LimitReached' : 'SubscriptionError', err.message));
  }

  /**
   * subscription_succeeded, with the members on a presence channel; on a
   * cache channel then its last event, or cache_miss.
   * @param {string[]} [replay] a cache channel's last event, as the engine holds it
   */
  succeeded(ws, internal, name, replay) {
    const kind = kindOf(name);
    if (!isPresence(kind)) return this.sendSucceeded(ws, internal, name, '{}', replay);
    this.presence.read(internal, false).then(
      ({ clients }) => this.sendSucceeded(ws, internal, name, presenceData(JSON.parse(clients)), replay),
      (err) => this.isOpen(ws) && ws.send(subscriptionError(name, err.status ?? 500, 'SubscriptionError', err.message))
    );
  }

  sendSucceeded(ws, internal, name, dataText, replay) {
    if (!this.isOpen(ws) || !this.subscriptions.has(ws, internal)) return; // left while the members were read
    ws.send(subscriptionSucceeded(name, dataText));
    this.countChanged(ws, internal, name);
    if (!isCached(kindOf(name))) return;
    if (replay === undefined || replay.length === 0) {
      ws.send(cacheMiss(name));
      return this.webhook(ws, internal, { name: 'cache_miss', channel: name });
    }
    ws.send(eventFrame(name, replay[replay.length - 1]));
  }

  /**
   * pusher:signin: `user_data` signed as `socket_id::user::user_data`. A
   * signed-in connection holds its user's own channel, where the HTTP API
   * reaches it (sendToUser, terminate_connections) on every worker and node.
   */
  signin(ws, { auth, user_data: userData }) {
    const session = ws[kSession];
    const { app } = session;
    const refuse = (message) => ws.send(errorFrame(PusherCode.UNAUTHORIZED, message));
    if (typeof userData !== 'string' || !authMatches(app, `${session.id}::user::${userData}`, auth)) return refuse('invalid signin signature');
    const user = userIdOf(userData);
    if (user === undefined) return refuse(`user_data must be a JSON object with an id of 1 to ${MAX_USER_ID_BYTES} bytes`);
    if (session.signedIn !== null && session.signedIn !== user) return refuse(`already signed in as another user`);
    if (session.signedIn === null) {
      session.signedIn = user;
      const channel = userChannel(app.appId, user);
      this.sessions.join({ owner: this, conn: ws, channel, latest: this.commands.namespace(channel).latest });
    }
    ws.send(signinSuccess(userData));
  }

  /** pusher:unsubscribe: leaving is always allowed; an unknown channel is nothing to leave. */
  unsubscribe(ws, { channel: name }) {
    if (!isValidName(name)) return; // a user's channel included: it is held as long as the sign-in
    const internal = internalName(ws[kSession].app.appId, name);
    if (this.subscriptions.has(ws, internal)) this.countChanged(ws, internal, name);
    this.commands.unsubscribe(ws, internal);
    this.sessions.leave(ws, internal);
    if (isPresence(kindOf(name))) this.sessions.leave(ws, membersChannel(internal), true);
    revokeChannel(ws, internal);
  }

  /**
   * A client event: a client publish (the core checks the grant its
   * signature gave, whether the app allows client events there, and the
   * rate), to every other subscriber of the channel. Any refusal is
   * pusher:error 4301, as Pusher answers.
   */
  clientEvent(ws, { event, channel: name, data }) {
    try {
      checkName(name);
      const text = typeof data === 'string' ? data : JSON.stringify(data);
      const { app, id: socketId } = ws[kSession];
      const max = maxEventBytes(app);
      if (text === undefined || Buffer.byteLength(text) > max) throw new GatewayError(ErrorCode.PAYLOAD_TOO_LARGE, `a client event's data is JSON of at most ${max} bytes`);
      const internal = internalName(app.appId, name);
      if (!this.subscriptions.has(ws, internal)) throw new GatewayError(ErrorCode.FORBIDDEN, `subscribe to ${name} before sending client events on it`);
      const userId = isPresence(kindOf(name)) ? (identityOf(ws).user ?? undefined) : undefined;
      // Not answered (Pusher acknowledges no client event); a refusal after the checks is told as one before them.
      this.commands.publish(ws, internal, eventData(event, data, userId), undefined, socketId).catch((err) => this.clientEventRefused(ws, err));
      this.webhook(ws, internal, { name: 'client_event', channel: name, event, data: text, socket_id: socketId, user_id: userId });
    } catch (err) {
      this.clientEventRefused(ws, err);
    }
  }

  /** A client event refused: pusher:error 4301, as Pusher answers. */
  clientEventRefused(ws, err) {
    if (!(err instanceof GatewayError)) throw err;
    metrics.errors.inc({ code: err.code });
    if (ws.readyState === ws.OPEN) ws.send(errorFrame(PusherCode.CLIENT_EVENT_REJECTED, err.message));
  }

  /** The channel's subscribers changed: the primary tells its count, if its app follows counts (./subscription-count.js). */
  countChanged(ws, internal, name) {
    if (countsSubscriptions(ws[kSession].app) && hasCount(name)) this.relay.send([Op.SUBSCRIPTIONS_CHANGED, internal]);
  }

  /** An event for the app's webhooks, which the primary sends (./webhooks.js). */
  webhook(ws, internal, event) {
    if (ws[kSession].app.webhooks.length > 0) this.relay.send([Op.PROTOCOL_WEBHOOK, internal, event]);
  }

  /** Answers a refused frame with pusher:error; anything but the family's errors is a bug and goes on up. */
  fail(ws, err) {
    if (!(err instanceof GatewayError)) throw err;
    if (!this.isOpen(ws)) return;
    metrics.errors.inc({ code: err.code });
    ws.send(errorFrame(null, err.message));
  }

  isOpen(ws) {
    return ws.readyState === ws.OPEN;
  }

  /** The identity an app's connections start with, made once per app. */
  identityOf(app) {
    let identity = this.identities.get(app.appId);
    if (identity === undefined) this.identities.set(app.appId, (identity = appIdentity(app)));
    return identity;
  }

  closed(ws, code) {
    // A presence user is Pusher's, not one of the gateway's users: the
    // session forgets the connection as it would an anonymous one.
    const { app } = ws[kSession];
    if (identityOf(ws)?.user != null) identify(ws, this.identityOf(app));
    if (app !== null && countsSubscriptions(app)) {
      for (const internal of this.subscriptions.channelsOf(ws)) if (!isOwn(internal)) this.countChanged(ws, internal, clientName(internal));
    }
    this.byApp.delete(ws);
    this.sessions.closed(ws, code);
  }
}

function isCached(kind) {
  return kind === Kind.CACHE || kind === Kind.PRIVATE_CACHE || kind === Kind.PRESENCE_CACHE;
}

function checkNameMessage(name) {
  try {
    checkName(name);
  } catch (err) {
    return err.message;
  }
  return '';
}

/**
 * The identity an app's connection starts with: no user; its public and
 * cache channels granted (the grant lists' shape is lib/core/permissions.js's).
 */
function appIdentity(app) {
  const subscribe = Object.freeze({ any: false, exact: new Set(), prefixes: publicPrefixes(app.appId), templates: [] });
  return Object.freeze({ user: null, expiresAt: undefined, permissions: Object.freeze({ subscribe, publish: NOTHING }), channels: [], info: undefined, shown: '' });
}

/**
 * @param {number} maxInfo bytes of user_info (the app's limit)
 * @returns {{user: string, info: *}|string} a presence subscription's member, or what is wrong with its channel_data
 */
function memberOf(channelData, maxInfo) {
  if (typeof channelData !== 'string') return 'channel_data is required on a presence channel';
  // Bounded before it is parsed: the info, its user_id and the JSON around them.
  if (Buffer.byteLength(channelData) > maxInfo + MAX_USER_LENGTH + 64) return `channel_data is over ${maxInfo} bytes of user_info`;
  let parsed;
  try {
    parsed = JSON.parse(channelData);
  } catch {
    return 'channel_data is not JSON';
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return 'channel_data must be a JSON object';
  const id = parsed.user_id;
  if ((typeof id !== 'string' && typeof id !== 'number') || String(id) === '' || String(id).length > MAX_USER_LENGTH) {
    return `channel_data needs a user_id (a string or number of 1 to ${MAX_USER_LENGTH} characters)`;
  }
  if (parsed.user_info !== undefined && Buffer.byteLength(JSON.stringify(parsed.user_info)) > maxInfo) return `user_info is over ${maxInfo} bytes`;
  return { user: String(id), info: parsed.user_info };
}

/** The members a presence subscription starts with, from the engine's clients (one member per user). */
function presenceData(clients) {
  const hash = Object.create(null); // a user may be called __proto__
  for (const entry of Object.values(clients)) if (typeof entry.user === 'string') hash[entry.user] = entry.info ?? null;
  const ids = Object.keys(hash);
  return JSON.stringify({ presence: { ids, hash, count: ids.length } });
}

/** The id of a sign-in's user_data, or undefined when it has none usable. */
function userIdOf(userData) {
  let parsed;
  try {
    parsed = JSON.parse(userData);
  } catch {
    return undefined;
  }
  const id = parsed?.id;
  return typeof id === 'string' && id !== '' && Buffer.byteLength(id) <= MAX_USER_ID_BYTES ? id : undefined;
}
