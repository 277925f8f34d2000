// Types of the gateway's client (lib/client/index.js), for editors and
// bundlers. The JavaScript is the source of truth; test/e2e/client/types.test.js
// type-checks an example against this file.

export declare const ErrorCode: Readonly<{
  BAD_REQUEST: 'bad_request';
  INVALID_CHANNEL: 'invalid_channel';
  TOO_MANY_SUBSCRIPTIONS: 'too_many_subscriptions';
  RATE_LIMITED: 'rate_limited';
  FORBIDDEN: 'forbidden';
  UNAUTHORIZED: 'unauthorized';
  TOKEN_EXPIRED: 'token_expired';
  PAYLOAD_TOO_LARGE: 'payload_too_large';
  UNAVAILABLE: 'unavailable';
  TOO_MANY: 'too_many';
  OVER_QUOTA: 'over_quota';
  EPOCH_CHANGED: 'epoch_changed';
  TOO_OLD: 'too_old';
  NOT_FOUND: 'not_found';
  METHOD_NOT_ALLOWED: 'method_not_allowed';
  DRAINING: 'draining';
  OVER_CAPACITY: 'over_capacity';
  ORIGIN: 'origin';
  IP_CAP: 'ip_cap';
}>;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export declare const CloseCode: Readonly<{
  GOING_AWAY: 1001;
  POLICY: 1008;
  TOO_BIG: 1009;
  INTERNAL: 1011;
  RESTART: 1012;
  TRY_AGAIN: 1013;
  AUTH_TIMEOUT: 4001;
  TOKEN_EXPIRED: 4003;
  DISCONNECTED: 4004;
}>;

export declare const ClientErrorCode: Readonly<{
  QUEUE_FULL: 'queue_full';
  DISCONNECTED: 'disconnected';
  CLOSED: 'closed';
  RECEIVE_ONLY: 'receive_only';
  BAD_DELTA: 'bad_delta';
}>;
export type ClientErrorCode = (typeof ClientErrorCode)[keyof typeof ClientErrorCode];

/** The gateway's errors: an error frame the gateway sent, or one the client raised itself (ClientError). */
export declare class GatewayError extends Error {
  constructor(code: string, message: string, id?: string | number);
  code: string;
  id?: string | number;
  /** The HTTP status the gateway answers this code with. */
  readonly status: number;
  /** The WebSocket close code, where the error ends a connection. */
  readonly closeCode: number | undefined;
}

/** The name GatewayError had in earlier releases of this client. */
export declare const ProtocolError: typeof GatewayError;
export type ProtocolError = GatewayError;

/** An error the client raised itself. */
export declare class ClientError extends GatewayError {
  constructor(code: ClientErrorCode, message: string, closeCode?: number);
  code: ClientErrorCode;
  /** With `closed`: the close code the gateway ended the client with. */
  readonly closeCode: number | undefined;
}

export declare const State: Readonly<{
  CONNECTING: 'connecting';
  OPEN: 'open';
  RECONNECTING: 'reconnecting';
  CLOSED: 'closed';
}>;
export type State = (typeof State)[keyof typeof State];

export type Transport = 'websocket' | 'sse';

export interface ClientOptions {
  /** WebSocket constructor; browsers and Node 22+ have one (pass the `ws` package's for its options). */
  WebSocket?: new (url: string) => unknown;
  /** EventSource constructor, for SSE; on Node pass the `eventsource` package's. */
  EventSource?: new (url: string, init?: { withCredentials?: boolean }) => unknown;
  /** SSE on another origin than the page's: send its cookies (a gateway under --auth hook). Default false. */
  withCredentials?: boolean;
  /** 'auto' (default): WebSocket, receiving over SSE when WebSockets keep failing. */
  transport?: 'auto' | Transport;
  /**
   * The WebSocket's frames: 'json' (default) or 'msgpack' (MessagePack; binary data is published and received as
   * Uint8Array; needs @msgpack/msgpack importable: in a browser, the gateway's /vendor/msgpack/index.mjs in an import map).
   */
  encoding?: Encoding;
  /** The gateway's /sse; by default /sse on the host of the client's URL. */
  sseUrl?: string | URL;
  /** Failed WebSocket attempts in a row before 'auto' falls back to SSE (3). */
  fallbackAfter?: number;
  /** ms on SSE before 'auto' tries a WebSocket again (60000). */
  websocketRetry?: number;
  backoffBase?: number;
  backoffCap?: number;
  maxQueued?: number;
  connectTimeout?: number;
  /** A JWT, for a gateway under --auth jwt. */
  token?: string;
  /** Instead of token: a fresh one for every (re)connect and refresh. */
  getToken?: () => Promise<string> | string;
}

export interface Welcome {
  connectionId?: string;
  worker?: number;
  pingInterval: number;
  /** 'jwt': the client authenticates with a token; 'hook': the application's connect hook admitted it (cookies). */
  auth?: 'jwt' | 'hook';
  /** 'sse' when receiving over Server-Sent Events. */
  transport?: 'sse';
}

export type Encoding = 'json' | 'msgpack';

export interface SubscribeOptions {
  /**
   * Let the gateway send a message as a fossil delta against the one before (in a namespace with `delta: true`);
   * handlers still get whole messages. Needs fossil-delta importable (in a browser: the gateway's /vendor/fossil-delta.js).
   */
  delta?: boolean;
}

export interface MessageInfo {
  type: 'message';
  channel: string;
  seq: number;
  data: unknown;
}

export interface Ack {
  type: 'ack';
  id?: number;
  seq?: number;
  epoch?: string;
  recovered?: boolean;
  /** In a `latest` namespace: the channel's latest message (seq `seq`) follows. */
  latest?: boolean;
}

/** A subscription the server made (the token's `channels` claim, or the server API's subscribe). */
export interface ServerSubscription {
  channel: string;
  seq: number;
  epoch: string;
  /** After a reconnect: whether what was missed follows. */
  recovered?: boolean;
}

/** A publish's ack: sent once the gateway's engine stored the message, at `seq` in `epoch`. */
export interface PublishAck extends Ack {
  seq: number;
  epoch: string;
}

/** One client in a presence channel: its token's sub (absent under --auth none) and info claim. */
export interface PresenceEntry {
  user?: string;
  info?: Record<string, unknown>;
}

/**
 * Who entered (`joins`) and left (`leaves`) a channel of a joinLeave namespace
 * since the channel's last diff, by connectionId (one's own included); at most
 * one per channel per --join-leave-interval, never replayed. A client that came
 * and went within one interval may appear in neither.
 */
export interface PresenceDiff {
  type: 'presence_diff';
  channel: string;
  joins: Record<string, PresenceEntry>;
  leaves: Record<string, PresenceEntry>;
}

export interface PresenceStats {
  clients: number;
  /** Distinct users among the clients. */
  users: number;
  /** The XOR of the client ids' hashes: equal to presenceDigest() of an exact list's ids. */
  digest: number;
}

/** The digest of a list of client ids, as presence_stats reports it. */
export declare function presenceDigest(ids: Iterable<string>): number;

export interface MembersEvents {
  change: (members: Map<string, PresenceEntry>) => void;
  /** A presence read failed (`too_many` past the gateway's --presence-max-clients). */
  error: (error: GatewayError | Error) => void;
}

/** A live member list of one channel: a presence read and the diffs after it, read again once resubscribed after a reconnect. */
export declare class Members {
  readonly channel: string;
  /** By client id (connectionId). */
  readonly members: Map<string, PresenceEntry>;
  /** Resolved once subscribed and first read. */
  readonly ready: Promise<void>;
  close(): Promise<unknown>;
  on<E extends keyof MembersEvents>(event: E, listener: MembersEvents[E]): () => void;
  off<E extends keyof MembersEvents>(event: E, listener: MembersEvents[E]): void;
}

export interface ClientEvents {
  state: (state: State, detail?: unknown) => void;
  recovered: (info: { channel: string; from: number; to: number }) => void;
  gap: (info: { channel: string; expected: number; got: number }) => void;
  error: (error: GatewayError | Error) => void;
  /** The server subscribed this connection to a channel (token claim or server API); its messages come as 'message'. */
  subscribed: (info: ServerSubscription) => void;
  /** The server ended one of its subscriptions. */
  unsubscribed: (info: { channel: string }) => void;
  /** A message on a channel the server subscribed the client to. */
  message: (data: unknown, message: MessageInfo) => void;
  /** Clients subscribed to or left a channel of a joinLeave namespace (at most one per channel per --join-leave-interval). */
  presence_diff: (diff: PresenceDiff) => void;
  /** A subscription is live again after a reconnect. */
  resubscribed: (info: { channel: string }) => void;
}

export declare class Client {
  constructor(url: string | URL, options?: ClientOptions);
  readonly url: string;
  readonly sseUrl: string;
  readonly state: State;
  /** What the client uses, or will use on its next connection. */
  readonly transport: Transport;
  readonly welcome: Welcome | undefined;
  subscribe<T = unknown>(channel: string, handler: (data: T, message: MessageInfo) => void, options?: SubscribeOptions): Promise<void>;
  subscribe<T = unknown>(channel: string, options: SubscribeOptions, handler?: (data: T, message: MessageInfo) => void): Promise<void>;
  unsubscribe(channel: string, handler?: (data: any, message: MessageInfo) => void): Promise<unknown>;
  /**
   * Resolved once the gateway stored the message, with its seq and epoch;
   * rejected with `unavailable` when it could not confirm that (the message
   * may have been published), and with `receive_only` over SSE. Binary data
   * (a Uint8Array) needs encoding 'msgpack'; JSON and SSE subscribers
   * receive it as `{b64: '<base64>'}`.
   */
  publish(channel: string, data: unknown): Promise<PublishAck>;
  /** Who is subscribed, by connectionId; rejected with `too_many` past --presence-max-clients, `receive_only` over SSE. */
  presence(channel: string): Promise<Record<string, PresenceEntry>>;
  presenceStats(channel: string): Promise<PresenceStats>;
  /** Subscribes and keeps a live member list of the channel. */
  members(channel: string): Members;
  close(): void;
  on<E extends keyof ClientEvents>(event: E, listener: ClientEvents[E]): () => void;
  off<E extends keyof ClientEvents>(event: E, listener: ClientEvents[E]): void;
}

export declare function connect(url: string | URL, options?: ClientOptions): Client;
