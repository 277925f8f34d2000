// The Ably WebSocket way in (`/`, as ably-js opens it): the connection's
// credential (a key, or a token), its app's count, CONNECTED (a resumed
// connection keeps its id: ./resume.js), and Ably's ProtocolMessages decoded
// and handed to the session and the core:
// - ATTACH and DETACH are joins and leaves. An ATTACH with the channelSerial
//   the client kept is a recovery (what it missed follows ATTACHED, flagged
//   RESUMED), one with a rewind starts back in the history (./rewind.js);
//   the members come in a SYNC, their arrivals and departures with the
//   messages. A credential that may not subscribe there is attached and
//   sent nothing.
// - A MESSAGE is publishes, a PRESENCE members entered, updated or left
//   (./presence.js), each acknowledged in order (ACK or NACK per
//   ProtocolMessage); HEARTBEAT is echoed; CLOSE closes.
// A credential refused is told in-band (ERROR, then the close): ably-js
// reads no HTTP status from a refused upgrade, and would retry forever.
import { randomInt } from 'node:crypto';
import { GatewayError } from '../core/errors.js';
import { identify } from '../core/identity.js';
import { kSession, kTransport } from '../core/symbols.js';
import { Keepalive } from '../session/keepalive.js';
import { AppCounts } from '../session/app-counts.js';
import { metrics, transportMetrics } from '../session/metrics.js';
import { socketListeners } from '../transport/ws-handlers.js';
import { allows, allowsAny } from './capability.js';
import { ablyName, checkName, internalName, membersChannel } from './channels.js';
import { AblyCode, AblyError, errorInfo } from './errors.js';
import { AppIdentities } from './identities.js';
import { checkKeyInClear, keyOfCredential, keyOfId } from './keys.js';
import { idempotencyKeyOf, messageData } from './messages.js';
import { Action, decodeMessage, encodeMessage, Flag, Format, sinceOf } from './protocol.js';
import { connectionKey, CONNECTION_STATE_TTL_MS, resumedConnection } from './resume.js';
import { rewindOf, rewindSince } from './rewind.js';
import { AblySession } from './session.js';
import { verifyToken } from './tokens.js';

const MAX_MESSAGES = 100; // in one MESSAGE

export class AblyConnections {
  /**
   * @param {object} options
   * @param {number} options.pingInterval --ping-interval: the idle interval told to clients (they give up 10 s after it)
   * @param {number} options.maxPayload --max-payload: the largest message
   * @param {number} options.maxBuffered --max-buffered: bytes a replay may queue to one client
   * @param {import('../pusher/apps.js').Apps} options.apps
   * @param {import('../transport/coalesce.js').WriteCoalescer} options.coalescer the worker's, for its connections' writes
   * @param {import('../session/subscriptions.js').Subscriptions} options.subscriptions
   * @param {import('../session/sessions.js').Sessions} options.sessions
   * @param {import('../core/commands.js').Commands} options.commands Ably's core: its names
   * @param {{ablyBasicAuth: string, trustForwarded: boolean}} options.keyPolicy where a key is taken in clear (./keys.js)
   * @param {import('./presence.js').AblyPresence} options.members
   * @param {import('../worker/relay.js').WorkerRelay} options.relay the history a rewind reads
   * @param {import('pino').Logger} options.log
   */
  constructor({ pingInterval, maxPayload, maxBuffered, apps, coalescer, subscriptions, sessions, commands, keyPolicy, members, relay, log }) {
    this.pingInterval = pingInterval;
    this.maxPayload = maxPayload;
    this.maxBuffered = maxBuffered;
    this.apps = apps;
    this.coalescer = coalescer;
    this.subscriptions = subscriptions;
    this.sessions = sessions;
    this.commands = commands;
    this.keyPolicy = keyPolicy;
    this.members = members;
    this.relay = relay;
    this.count = 0;
    this.opened = 0;
    this.byApp = new AppCounts(relay); // its connections by app, counted within each app's maxConnections
    this.metrics = transportMetrics('ws', 'ably', { apps: this.byApp });
    this.Session = AblySession;
    // connectionIds: unique across workers and nodes, of Ably's characters.
    this.idPrefix = `${randomInt(1, 2 ** 47).toString(36)}-`;
    this.nextId = 0;
    this.identities = new AppIdentities(apps);
    apps.on('change', (app, previous) => previous !== undefined && this.appChanged(app, previous));
    this.listen = socketListeners(this, log, 'ably');
  }

  /**
   * An app changed: its connections follow it, one connected with a key
   * under the key's capability as it is now (one with a token keeps the
   * token's until it ends); removed or disabled, or their key gone, they are
   * told so (ERROR 40101: ably-js fails rather than retries) and closed.
   */
  appChanged(app, previous) {
    const held = this.byApp.of(previous.appId);
    if (held === undefined) return;
    const gone = app === undefined ? 'the app was removed' : !app.enabled ? 'the app is disabled' : undefined;
    for (const ws of [...held]) {
      const session = ws[kSession];
      const key = gone === undefined && session.keyId !== undefined ? keyOfId(app, session.keyId) : undefined;
      if (gone !== undefined || (session.keyId !== undefined && key === undefined)) {
        this.refuse(ws, new AblyError(AblyCode.NO_CREDENTIALS, gone ?? 'the key was removed'));
        continue;
      }
      session.app = app;
      if (key === undefined || key.capability === session.capability) continue;
      session.capability = key.capability;
      this.dropForbidden(ws);
    }
  }

  /**
   * What the connection's capability (just narrowed) no longer allows: the
   * channels it may no longer receive, left, each told so (channel ERROR
   * 40160); its members where it may no longer be present, gone (everyone
   * is told their LEAVE).
   */
  dropForbidden(ws) {
    const { capability, entered } = ws[kSession];
    for (const internal of this.subscriptions.channelsOf(ws)) {
      const name = ablyName(internal);
      if (allows(capability, name, 'subscribe')) continue;
      this.leaveChannel(ws, internal);
      this.channelError(ws, name, new AblyError(AblyCode.CAPABILITY, `the credential may no longer receive ${name}`));
    }
    for (const members of [...(entered?.keys() ?? [])]) if (!allows(capability, ablyName(members), 'presence')) this.members.leaveAll(ws, members);
  }

  /** Leaves a channel the connection holds. */
  leaveChannel(ws, internal) {
    this.commands.unsubscribe(ws, internal);
    this.sessions.leave(ws, internal);
  }

  /** A channel's ERROR: ably-js fails that channel, and the connection goes on. */
  channelError(ws, name, err) {
    this.send(ws, { action: Action.ERROR, channel: name, error: errorInfo(err) });
  }

  /** A WebSocket on / just upgraded: its credential checked, then CONNECTED, or told why not. */
  accept(ws, ip, req) {
    this.listen(ws);
    const session = this.sessions.begin(ws, this, `${this.idPrefix}${(this.nextId++).toString(36)}`);
    this.sessions.opened(ws, ip);
    const query = new URLSearchParams(req.url.slice(req.url.indexOf('?') + 1));
    session.format = query.get('format') === Format.MSGPACK ? Format.MSGPACK : Format.JSON;
    session.echo = query.get('echo') !== 'false';
    let credential;
    try {
      credential = this.credential(query, req, ip);
    } catch (err) {
      return this.refuse(ws, err);
    }
    // A key is checked at once, so frames sent right after the upgrade find the connection ready; a token takes a turn.
    if (!(credential instanceof Promise)) return this.connected(ws, credential, query);
    credential.then(
      (checked) => this.connected(ws, checked, query),
      (err) => this.refuse(ws, err)
    );
  }

  /**
   * @returns {{app, capability, clientId: string|undefined, expires?: number} | Promise<object>} what the
   *   query's key says, or a promise of what its token says
   * @throws {AblyError} a refusal found without asking anything
   */
  credential(query, req, ip) {
    const version = Number(query.get('v'));
    if (!(version >= 2)) throw new AblyError(AblyCode.BAD_REQUEST, 'protocol version v=2 or later is served');
    const token = query.get('access_token');
    if (token !== null) return verifyToken(this.apps, token);
    const key = query.get('key');
    if (key === null) throw new AblyError(AblyCode.NO_CREDENTIALS, 'no key or access_token given');
    checkKeyInClear(req, ip, this.keyPolicy);
    const found = keyOfCredential(this.apps, key);
    if (found === undefined) throw new AblyError(AblyCode.NO_CREDENTIALS, 'invalid key');
    return { app: found.app, capability: found.capability, clientId: undefined, wildcard: true, keyId: found.keyId };
  }

  /** A credential checked: the connection counted in its app (within its maxConnections), then CONNECTED. */
  connected(ws, credential, query) {
    if (!this.isOpen(ws)) return;
    const { app, clientId, wildcard = false } = credential;
    const asked = query.get('clientId') ?? undefined;
    if (asked !== undefined && clientId !== undefined && asked !== clientId) return this.refuse(ws, new AblyError(AblyCode.CONNECTION_CLIENT_ID, 'clientId is not the token\'s'));
    if (asked !== undefined && clientId === undefined && !wildcard) return this.refuse(ws, new AblyError(AblyCode.CONNECTION_CLIENT_ID, 'an anonymous token names no clientId'));
    const admitted = this.byApp.admit(app);
    if (admitted === true) return this.established(ws, credential, query);
    admitted.then((allowed) => {
      if (!this.isOpen(ws)) return allowed && this.byApp.release(app);
      // A limit, not a bad credential: DISCONNECTED, and ably-js tries again later.
      if (!allowed) return this.disconnect(ws, new AblyError(AblyCode.CONNECTION_LIMIT, `the app has its ${app.maxConnections} connections`));
      this.established(ws, credential, query);
    });
  }

  established(ws, { app, capability, clientId, wildcard = false, expires, keyId }, query) {
    const session = ws[kSession];
    const asked = query.get('clientId') ?? undefined;
    this.byApp.add(ws, app);
    session.capability = capability;
    session.keyId = keyId;
    session.clientId = clientId === '*' ? asked : (clientId ?? asked);
    session.wildcard = clientId === '*' || (wildcard && asked === undefined);
    identify(ws, this.identities.of(app));
    if (expires !== undefined) this.expireAt(ws, expires);
    const resuming = query.get('resume') ?? query.get('recover');
    let error;
    if (resuming !== null) {
      try {
        session.connectionId = resumedConnection(resuming, app, session.clientId);
      } catch (err) {
        error = errorInfo(err);
      }
    }
    this.send(ws, this.connectedMessage(session, error));
  }

  /** CONNECTED: the connection's id and details, with a new connectionKey each time (./resume.js). */
  connectedMessage(session, error) {
    return {
      action: Action.CONNECTED,
      connectionId: session.connectionId,
      connectionDetails: {
        connectionKey: connectionKey(session.app, session.connectionId, session.clientId),
        clientId: session.clientId,
        connectionStateTtl: CONNECTION_STATE_TTL_MS,
        maxIdleInterval: this.pingInterval,
        maxMessageSize: this.maxPayload,
        serverId: 'gateway'
      },
      error
    };
  }

  /** The token ends at `expires`: DISCONNECTED with 40142 then, so ably-js renews it and connects again. */
  expireAt(ws, expires) {
    const session = ws[kSession];
    clearTimeout(session.expiry);
    session.expiry = setTimeout(() => this.disconnect(ws, new AblyError(AblyCode.TOKEN_EXPIRED, 'the token has expired')), Math.max(0, expires - Date.now()));
    session.expiry.unref();
  }

  /** DISCONNECTED with why, then the close: ably-js connects again (after renewing its token, for a 4014x). */
  disconnect(ws, err) {
    if (!this.isOpen(ws)) return;
    this.send(ws, { action: Action.DISCONNECTED, error: errorInfo(err) });
    ws.close(1000);
  }

  /** A connection's credential refused: ERROR, then the close. */
  refuse(ws, err) {
    if (!(err instanceof GatewayError)) throw err;
    if (!this.isOpen(ws)) return;
    metrics.errors.inc({ code: err.code });
    this.send(ws, { action: Action.ERROR, error: errorInfo(err) });
    ws.close(1000);
  }

  message(ws, data, isBinary) {
    Keepalive.alive(ws);
    const session = ws[kSession];
    if (session.app === null) return; // its credential is still being checked, or was refused
    try {
      this.run(ws, decodeMessage(session.format, data, isBinary));
    } catch (err) {
      this.refuse(ws, err);
    }
  }

  run(ws, message) {
    switch (message.action) {
      case Action.HEARTBEAT:
        return this.send(ws, { action: Action.HEARTBEAT, id: typeof message.id === 'string' ? message.id.slice(0, 256) : undefined });
      case Action.ATTACH:
        return this.attach(ws, message);
      case Action.DETACH:
        return this.detach(ws, message);
      case Action.MESSAGE:
        return this.publish(ws, message);
      case Action.AUTH:
        return this.reauthorise(ws, message);
      case Action.CLOSE:
        // Closed for good: its members leave now, not after the grace a dropped socket has.
        this.members.leaveAll(ws);
        this.send(ws, { action: Action.CLOSED });
        return ws.close(1000);
      case Action.DISCONNECT:
        this.send(ws, { action: Action.DISCONNECTED });
        return ws.close(1000);
      case Action.PRESENCE:
        return this.acknowledge(ws, message.msgSerial, () => this.presence(ws, message));
      case Action.SYNC:
        return this.sync(ws, message.channel);
    }
    throw new AblyError(AblyCode.BAD_REQUEST, `action ${message.action} is not one a client sends`);
  }

  attach(ws, { channel: name, channelSerial, params }) {
    const session = ws[kSession];
    try {
      checkName(name);
      if (!allowsAny(session.capability, name)) throw new AblyError(AblyCode.CAPABILITY, `the credential may do nothing on ${name}`);
      const internal = internalName(session.app.appId, name);
      const held = this.sessions.held(ws, internal);
      if (held !== undefined) {
        // Ably answers an attach once: one under way is answered when it ends.
        if (held.live) {
          this.attached(ws, name, held.local.seq, held.local.epoch);
          this.sync(ws, name);
        }
        return;
      }
      // Nothing to receive: attached (it may publish or be present there), without a channelSerial.
      if (!allows(session.capability, name, 'subscribe')) return this.send(ws, { action: Action.ATTACHED, channel: name, flags: this.modes(session.capability, name) });
      const since = sinceOf(channelSerial);
      // A rewind on a fresh attach only: one that continues from its channelSerial gets what it missed instead.
      const rewind = since === undefined ? rewindOf(params) : undefined;
      this.commands.subscribe(ws, internal, since, undefined);
      const request = { owner: this, conn: ws, channel: internal, latest: false, name, since, resuming: since !== undefined, rewind: rewind === undefined ? undefined : params.rewind };
      if (rewind !== undefined) {
        const { historySize } = this.commands.namespace(internal);
        request.wait = rewindSince(this.relay, internal, rewind, historySize).then((from) => void (request.since = from));
      }
      this.sessions.join(request);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      this.channelError(ws, typeof name === 'string' ? name.slice(0, 200) : undefined, err);
    }
  }

  /**
   * Where a join ended (lib/session/sessions.js): ATTACHED, where the
   * channel stands; after a recovery, RESUMED and then what was missed, each
   * message with its own channelSerial. A recovery that cannot be made (the
   * channel started over, or its history no longer reaches back) is an
   * ATTACHED without RESUMED: the client knows it lost messages.
   */
  joined({ conn: ws, channel, name, since, resuming, rewind }, { live, seq, epoch, recovered, replay }) {
    if (!live || !this.isOpen(ws)) return;
    const replayed = since !== undefined && (recovered === true || (recovered === undefined && replay !== undefined));
    const attachment = { resumed: resuming && replayed, lost: resuming && !replayed, backlog: !resuming && replayed && replay?.length > 0, rewind };
    this.attached(ws, name, seq, epoch, attachment);
    if (replayed && replay !== undefined) {
      const transport = ws[kTransport];
      const first = seq - replay.length + 1;
      for (let i = 0; i < replay.length; i++) transport.writeMessage(ws, transport.encode(channel, first + i, epoch, replay[i]), this.maxBuffered);
    }
    this.sync(ws, name);
  }

  /**
   * @param {object} [attachment]
   * @param {boolean} [attachment.resumed] continued from the client's channelSerial: what it missed follows
   * @param {boolean} [attachment.lost] a continuation was asked and cannot be made: told as Ably's 90003
   * @param {boolean} [attachment.backlog] a rewind's messages follow
   * @param {string} [attachment.rewind] the rewind asked for, echoed in the params
   */
  attached(ws, name, seq, epoch, { resumed = false, lost = false, backlog = false, rewind } = {}) {
    const flags = this.modes(ws[kSession].capability, name) | (resumed ? Flag.RESUMED : 0) | (backlog ? Flag.HAS_BACKLOG : 0);
    const error = lost ? errorInfo(new AblyError(AblyCode.CONTINUITY_LOST, 'the messages since the channelSerial are no longer held')) : undefined;
    const params = rewind === undefined ? undefined : { rewind };
    this.send(ws, { action: Action.ATTACHED, channel: name, channelSerial: `${epoch}:${seq}`, flags, params, error });
  }

  /** The modes a capability grants on a channel, as ATTACHED's flags say them. */
  modes(capability, name) {
    let flags = 0;
    if (allows(capability, name, 'publish')) flags |= Flag.PUBLISH;
    // A SYNC follows, an empty one too: ably-js then knows the channel has no members.
    if (allows(capability, name, 'subscribe')) flags |= Flag.SUBSCRIBE | Flag.PRESENCE_SUBSCRIBE | Flag.HAS_PRESENCE;
    if (allows(capability, name, 'presence')) flags |= Flag.PRESENCE;
    return flags;
  }

  /** A join the session refused (the engine): the channel's ERROR. */
  joinRefused({ conn: ws, name }, err) {
    if (this.isOpen(ws)) this.channelError(ws, name, err);
  }

  /** DETACH: the channel left, and the members the connection entered there. */
  detach(ws, { channel: name }) {
    if (typeof name !== 'string') throw new AblyError(AblyCode.BAD_REQUEST, 'DETACH names a channel');
    const internal = internalName(ws[kSession].app.appId, name);
    if (this.subscriptions.holds(ws, internal)) this.leaveChannel(ws, internal);
    this.members.leaveAll(ws, membersChannel(internal));
    this.send(ws, { action: Action.DETACHED, channel: name });
  }

  /** A PRESENCE: its members entered, updated or left (./presence.js), once the credential allows it there. */
  presence(ws, { channel: name, msgSerial, presence }) {
    const session = ws[kSession];
    checkName(name);
    if (!allows(session.capability, name, 'presence')) throw new AblyError(AblyCode.CAPABILITY, `the credential may not be present on ${name}`);
    return this.members.update(ws, membersChannel(internalName(session.app.appId, name)), presence, msgSerial);
  }

  /**
   * The channel's members, as one SYNC (a connection that may subscribe, on
   * each attach and when it asks); a read the engine cannot answer detaches
   * the channel with 50003, and ably-js attaches again.
   */
  sync(ws, name) {
    const session = ws[kSession];
    if (typeof name !== 'string' || !allows(session.capability, name, 'subscribe')) return;
    const internal = internalName(session.app.appId, name);
    if (!this.subscriptions.holds(ws, internal)) return;
    const members = membersChannel(internal);
    // Live here: the worker's view of the channel's members; a client's SYNC while it still joins: a read.
    const local = this.subscriptions.local(internal);
    const present = local?.routed && local.has(ws) ? this.members.present(local, members) : this.members.read(members);
    present.then(
      (presence) => {
        if (!this.isOpen(ws)) return;
        this.members.adopt(ws, members, presence);
        this.send(ws, { action: Action.SYNC, channel: name, presence });
      },
      (err) => {
        if (!this.isOpen(ws) || !this.subscriptions.holds(ws, internal)) return;
        this.leaveChannel(ws, internal);
        this.send(ws, { action: Action.DETACHED, channel: name, error: errorInfo(err instanceof GatewayError ? err : new AblyError(AblyCode.UNAVAILABLE, 'the members could not be read')) });
      }
    );
  }

  /** A MESSAGE: each message published in order, the whole acknowledged once (ACK with their serials, or NACK). */
  publish(ws, { channel: name, msgSerial, messages }) {
    this.acknowledge(ws, msgSerial, () => this.publishAll(ws, name, messages, msgSerial));
  }

  /**
   * Queues the acknowledgement of the ProtocolMessage `msgSerial`, which
   * `run()` settles: an ACK with the serials it resolves with, or a NACK
   * with the refusal it throws or rejects with.
   */
  acknowledge(ws, msgSerial, run) {
    if (!Number.isSafeInteger(msgSerial) || msgSerial < 0) throw new AblyError(AblyCode.BAD_REQUEST, 'a MESSAGE or PRESENCE carries its msgSerial');
    const ack = { msgSerial, settled: false, answer: undefined };
    (ws[kSession].acks ??= []).push(ack);
    let outcome;
    try {
      outcome = run();
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      outcome = Promise.reject(err);
    }
    outcome.then(
      (serials) => this.settle(ws, ack, { action: Action.ACK, msgSerial, count: 1, res: serials === undefined ? undefined : [{ serials }] }),
      (err) => this.settle(ws, ack, { action: Action.NACK, msgSerial, count: 1, error: errorInfo(err) })
    );
  }

  /** @returns {Promise<string[]>} each message's channelSerial, once the engine holds them all */
  publishAll(ws, name, messages, msgSerial) {
    const session = ws[kSession];
    checkName(name);
    if (!allows(session.capability, name, 'publish')) throw new AblyError(AblyCode.CAPABILITY, `the credential may not publish on ${name}`);
    if (!Array.isArray(messages) || messages.length === 0 || messages.length > MAX_MESSAGES) throw new AblyError(AblyCode.BAD_REQUEST, `a MESSAGE holds 1 to ${MAX_MESSAGES} messages`);
    const timestamp = Date.now();
    const who = { clientId: session.clientId, wildcard: session.wildcard };
    // No larger than the frame that carried them, which --max-payload bounds.
    const data = messages.map((message, i) => messageData(message, who, { id: `${session.connectionId}:${msgSerial}:${i}`, connectionId: session.connectionId, timestamp }));
    const internal = internalName(session.app.appId, name);
    const exclude = session.echo ? undefined : session.id;
    // Each keyed by its id (the connection's id, msgSerial and place, unless the client named it), so
    // one ably-js sends again on a resumed connection, its ACK lost with the socket, is published once.
    return Promise.all(data.map((message) => this.commands.publish(ws, internal, message, undefined, exclude, idempotencyKeyOf(message.id)))).then((results) =>
      results.map((result) => (result === undefined ? '' : `${result.epoch}:${result.seq}`))
    );
  }

  /** Answers the publishes in the order they came: ably-js matches ACKs to its queue by position. */
  settle(ws, ack, answer) {
    const session = ws[kSession];
    ack.settled = true;
    ack.answer = answer;
    const acks = session.acks;
    while (acks.length > 0 && acks[0].settled) {
      const { answer: next } = acks.shift();
      if (next.action === Action.NACK) metrics.errors.inc({ code: 'ably_nack' });
      if (this.isOpen(ws)) this.send(ws, next);
    }
    if (acks.length === 0) session.acks = undefined;
  }

  /** AUTH: a renewed token for the same app and clientId, taken in place (CONNECTED again, the same connection). */
  reauthorise(ws, { auth }) {
    const session = ws[kSession];
    verifyToken(this.apps, auth?.accessToken).then(
      ({ app, capability, clientId, expires }) => {
        if (!this.isOpen(ws)) return;
        if (app !== session.app || (clientId !== '*' && clientId !== session.clientId)) {
          return this.refuse(ws, new AblyError(AblyCode.CONNECTION_CLIENT_ID, 'a renewed token is for the same app and clientId'));
        }
        session.capability = capability;
        session.keyId = undefined; // a token's from now on
        this.dropForbidden(ws);
        this.expireAt(ws, expires);
        this.send(ws, this.connectedMessage(session));
      },
      (err) => this.refuse(ws, err)
    );
  }

  send(ws, message) {
    ws.send(encodeMessage(ws[kSession].format, message));
  }

  isOpen(ws) {
    return ws.readyState === ws.OPEN;
  }

  closed(ws, code) {
    const { expiry } = ws[kSession];
    clearTimeout(expiry);
    this.members.closed(ws);
    this.byApp.delete(ws);
    this.sessions.closed(ws, code);
  }
}
