// The gateway's errors: one family. Whatever goes wrong where a client, the
// application's backend or an operator can see it is a GatewayError with a
// stable `code`; callers branch on the code, never on the message. Each
// error knows how it is answered on every way in: its HTTP status (a route,
// an SSE request, an upgrade refused at the door) and, where it ends a
// connection, its WebSocket close code. No route keeps a table of its own.
//
// Plain JavaScript with no imports: the browser client and the protocol's
// checks (./protocol/) load it as it is.

/**
 * The codes of the errors no client sees, each in the operator's log and a
 * metric's label: a request to the application's backend (BackendError), a
 * hook's answer that cannot be used (HookFailed's `result`), a PROXY protocol
 * header (ProxyHeaderError), a start refused (UsageError, InternalsChanged).
 */
export const InternalCode = Object.freeze({
  TIMEOUT: 'timeout', // no complete answer within the timeout
  UNREACHABLE: 'unreachable', // no connection, or it broke before the answer was whole
  TOO_LARGE: 'too_large', // the answer's body is over its cap
  REDIRECT: 'redirect', // a 3xx: not followed
  STATUS: 'status', // answered, but not 2xx (for a caller that takes 2xx only)
  SERVER_ERROR: 'server_error', // a hook answered 5xx
  INVALID: 'invalid', // a hook's answer: not 2xx/5xx, not JSON, or not the answer the hook takes
  QUEUE_FULL: 'queue_full', // a hook request refused: too many waiting
  GONE: 'gone', // the client left while its hook request waited: never sent
  PROXY_MISSING: 'proxy_missing',
  PROXY_TOO_LONG: 'proxy_too_long',
  PROXY_MALFORMED: 'proxy_malformed',
  PROXY_TRUNCATED: 'proxy_truncated',
  PROXY_TIMEOUT: 'proxy_timeout',
  PROXY_HEADER: 'proxy_header', // the PROXY header could not be read, for another reason
  USAGE: 'usage',
  LISTEN: 'listen', // a listener could not bind its port
  INTERNALS_CHANGED: 'internals_changed'
});

/** The codes of the wire (`{"type":"error","code":…}` frames and every HTTP error body). */
export const ErrorCode = Object.freeze({
  BAD_REQUEST: 'bad_request', // not JSON, unknown type, missing or wrong field
  INVALID_CHANNEL: 'invalid_channel', // a bad name, or a namespace that does not exist
  TOO_MANY_SUBSCRIPTIONS: 'too_many_subscriptions',
  RATE_LIMITED: 'rate_limited', // the connection's rate, or the gateway busy relaying
  FORBIDDEN: 'forbidden', // the identity's grants, the namespace or the application's hook say no (or a wrong API key)
  UNAUTHORIZED: 'unauthorized', // no valid credential yet, or a bad one
  TOKEN_EXPIRED: 'token_expired',
  PAYLOAD_TOO_LARGE: 'payload_too_large',
  UNAVAILABLE: 'unavailable', // the engine or the application's backend cannot answer now: retry later
  TOO_MANY: 'too_many', // an answer would exceed its bound
  OVER_QUOTA: 'over_quota', // an app's own limit on backend events per second (Pusher's HTTP API, Ably's REST)
  EPOCH_CHANGED: 'epoch_changed', // a history read's since is from another sequence of the channel
  TOO_OLD: 'too_old', // a history read's since is older than the history reaches
  NOT_FOUND: 'not_found', // no such route or server API method
  METHOD_NOT_ALLOWED: 'method_not_allowed',
  // Refusals at the door, before a connection exists (HTTP only).
  DRAINING: 'draining',
  OVER_CAPACITY: 'over_capacity',
  ORIGIN: 'origin',
  IP_CAP: 'ip_cap'
});

/** WebSocket close codes the gateway uses. */
export const CloseCode = Object.freeze({
  GOING_AWAY: 1001, // drain: reconnect elsewhere
  POLICY: 1008,
  TOO_BIG: 1009,
  INTERNAL: 1011,
  RESTART: 1012,
  TRY_AGAIN: 1013, // slow consumer, over capacity, the backend unavailable
  AUTH_TIMEOUT: 4001, // no valid credential in time (and a hook's refusal by default): do not retry with the same one
  TOKEN_EXPIRED: 4003, // the identity's end passed unrefreshed: get a new token and reconnect
  DISCONNECTED: 4004 // disconnected by the server API: do not reconnect
});

// code -> [HTTP status, close code where the error ends a connection]
const ANSWERS = {
  [ErrorCode.BAD_REQUEST]: [400, CloseCode.POLICY],
  [ErrorCode.INVALID_CHANNEL]: [400, CloseCode.POLICY],
  [ErrorCode.TOO_MANY_SUBSCRIPTIONS]: [400, CloseCode.POLICY],
  [ErrorCode.RATE_LIMITED]: [503, CloseCode.TRY_AGAIN],
  [ErrorCode.FORBIDDEN]: [403, CloseCode.POLICY],
  [ErrorCode.UNAUTHORIZED]: [401, CloseCode.AUTH_TIMEOUT],
  [ErrorCode.TOKEN_EXPIRED]: [401, CloseCode.TOKEN_EXPIRED],
  [ErrorCode.PAYLOAD_TOO_LARGE]: [413, CloseCode.TOO_BIG],
  [ErrorCode.UNAVAILABLE]: [503, CloseCode.TRY_AGAIN],
  [ErrorCode.TOO_MANY]: [400, CloseCode.POLICY],
  [ErrorCode.OVER_QUOTA]: [429, CloseCode.TRY_AGAIN],
  [ErrorCode.EPOCH_CHANGED]: [400, CloseCode.POLICY],
  [ErrorCode.TOO_OLD]: [400, CloseCode.POLICY],
  [ErrorCode.NOT_FOUND]: [404, CloseCode.POLICY],
  [ErrorCode.METHOD_NOT_ALLOWED]: [405, CloseCode.POLICY],
  [ErrorCode.DRAINING]: [503, CloseCode.GOING_AWAY],
  [ErrorCode.OVER_CAPACITY]: [503, CloseCode.TRY_AGAIN],
  [ErrorCode.ORIGIN]: [403, CloseCode.POLICY],
  [ErrorCode.IP_CAP]: [429, CloseCode.POLICY]
};

// Errors whose code is not a wire code (the backend's failures, a bad PROXY
// header, a runtime that changed) end a connection as an internal error.
const INTERNAL = [500, CloseCode.INTERNAL];

export class GatewayError extends Error {
  /**
   * @param {string} code an ErrorCode, or the subclass's own
   * @param {string} message for people: what is wrong and what to do
   * @param {string|number} [id] the client frame's id, echoed in the error frame
   */
  constructor(code, message, id) {
    super(message);
    this.code = code;
    if (id !== undefined) this.id = id;
  }

  get name() {
    return this.constructor.name;
  }

  /** The HTTP status a route answers it with. */
  get status() {
    return (ANSWERS[this.code] ?? INTERNAL)[0];
  }

  /** The WebSocket close code, where it ends a connection. */
  get closeCode() {
    return (ANSWERS[this.code] ?? INTERNAL)[1];
  }
}

// Members of the family that carry more than a code and a message.

/** The application's backend refused (a hook's `error`): `forbidden`, and for a WebSocket the application's close code. */
export class HookRefused extends GatewayError {
  constructor(closeCode, message, id) {
    super(ErrorCode.FORBIDDEN, message, id);
    this.applicationCloseCode = closeCode;
  }

  get closeCode() {
    return this.applicationCloseCode;
  }
}

/** The application's backend gave no usable answer: `unavailable`; `result` says why (the hook metrics' label). */
export class HookFailed extends GatewayError {
  constructor(result, message, id) {
    super(ErrorCode.UNAVAILABLE, message, id);
    this.result = result;
  }
}

/** What a client is told of a refusal: the backend's own failure stays in the log. */
export function toldToClient(err) {
  return err instanceof HookFailed ? 'the application backend is unavailable: retry later' : err.message;
}

/**
 * The refusal of what needs the engine while it does not answer (Redis
 * unreachable, or not answering this call): the client may retry shortly.
 * @param {string|number} [id] the command's, when a client's
 */
export function engineUnavailable(id) {
  return new GatewayError(ErrorCode.UNAVAILABLE, 'the engine (Redis) did not answer: retry shortly', id);
}

/** A credential refused, or an identity not admitted: `reason` is the auth failure metrics' label. */
export class AuthFailed extends GatewayError {
  constructor(code, reason, message, id) {
    super(code, message, id);
    this.reason = reason;
  }
}

/** A request to the application's backend that got no usable answer; its code is an InternalCode (TIMEOUT … STATUS). */
export class BackendError extends GatewayError {}

/** A connection whose PROXY protocol header is missing or malformed (lib/transport/proxy-protocol.js): it is dropped. */
export class ProxyHeaderError extends GatewayError {}

/** A command line, environment or configuration file the gateway cannot start with: exit 2 with the message. */
export class UsageError extends GatewayError {
  constructor(message) {
    super(InternalCode.USAGE, message);
  }
}

const LISTEN_REASONS = {
  EADDRINUSE: 'the port is taken (another process, or another gateway, listens there)',
  EACCES: 'not allowed (a port under 1024 needs privileges)',
  EADDRNOTAVAIL: 'no interface of this machine has that address'
};

/**
 * A listener that could not bind: the flag that set its port, the port and
 * the reason, in one line an operator can act on.
 */
export class ListenError extends GatewayError {
  /**
   * @param {string} flag the option that chose the port, e.g. '--metrics-port'
   * @param {Error & {code?: string, address?: string, port?: number}} cause Node's error from listen()
   */
  constructor(flag, cause) {
    const reason = LISTEN_REASONS[cause.code] ?? cause.message;
    super(InternalCode.LISTEN, `${flag} ${cause.port}: cannot listen on ${cause.address}:${cause.port}: ${reason} (${cause.code})`);
    this.flag = flag;
    this.port = cause.port;
  }
}

/** A runtime or ws release changed an internal the gateway relies on (lib/runtime/internals.js): it refuses to start. */
export class InternalsChanged extends GatewayError {
  constructor(what) {
    super(InternalCode.INTERNALS_CHANGED, `this runtime changed an internal the gateway relies on: ${what}`);
  }
}
