// Ably's error codes, and the one table that maps the gateway's error family
// onto them: every refusal on the Ably way in is a GatewayError, told to the
// client as Ably's ErrorInfo ({code, statusCode, message}).
import { ErrorCode, GatewayError } from '../core/errors.js';

/** The Ably codes the gateway answers with (Ably's own numbers). */
export const AblyCode = Object.freeze({
  BAD_REQUEST: 40000,
  BAD_PARAMETER: 40003,
  MESSAGE_TOO_LARGE: 40009,
  BAD_CHANNEL: 40010,
  CLIENT_ID_MISMATCH: 40012, // a message's clientId is not the connection's
  NO_CREDENTIALS: 40101, // a bad or unknown key, a bad TokenRequest: the client fails
  CONNECTION_CLIENT_ID: 40102,
  BASIC_AUTH_REFUSED: 40103, // a key sent in clear from beyond this machine
  TIMESTAMP: 40104,
  NONCE_REUSED: 40105, // a TokenRequest replayed
  CONNECTION_LIMIT: 40111, // the app has its maxConnections: the client tries again later
  TOKEN: 40140, // a token the gateway cannot use: the client renews it
  TOKEN_EXPIRED: 40142,
  TOKEN_BAD: 40144,
  CAPABILITY: 40160,
  NOT_FOUND: 40400,
  RATE_LIMITED: 42910,
  INTERNAL: 50000,
  UNAVAILABLE: 50003,
  RESUME_FAILED: 80008, // a connection that cannot be resumed: CONNECTED with a new connectionId
  RESUME_MALFORMED: 80018,
  CONTINUITY_LOST: 90003, // an attach's channelSerial is from another sequence, or older than the history
  NO_CLIENT_ID: 91000, // presence entered by a connection with no clientId
  UNSUPPORTED: 93002 // updates, annotations, objects
});

// A code's HTTP status is its first three digits, but for these.
const STATUS = new Map([
  [AblyCode.RESUME_FAILED, 400],
  [AblyCode.RESUME_MALFORMED, 400],
  [AblyCode.CONTINUITY_LOST, 404],
  [AblyCode.NO_CLIENT_ID, 400],
  [AblyCode.UNSUPPORTED, 400]
]);

// A refusal of Ably's own, made with the family code its status says.
const FAMILY = new Map([
  [400, ErrorCode.BAD_REQUEST],
  [401, ErrorCode.UNAUTHORIZED],
  [404, ErrorCode.NOT_FOUND],
  [429, ErrorCode.RATE_LIMITED],
  [500, ErrorCode.UNAVAILABLE]
]);

/** An Ably refusal: the family's error, with Ably's code. */
export class AblyError extends GatewayError {
  /**
   * @param {number} ablyCode one of AblyCode
   * @param {string} message
   * @param {*} [id]
   */
  constructor(ablyCode, message, id) {
    const statusCode = STATUS.get(ablyCode) ?? Math.floor(ablyCode / 100);
    super(FAMILY.get(statusCode) ?? ErrorCode.BAD_REQUEST, message, id);
    this.ablyCode = ablyCode;
    this.statusCode = statusCode;
  }
}

// The family's codes, as the core refuses a command, in Ably's words.
const FROM_FAMILY = new Map([
  [ErrorCode.BAD_REQUEST, [AblyCode.BAD_REQUEST, 400]],
  [ErrorCode.INVALID_CHANNEL, [AblyCode.BAD_CHANNEL, 400]],
  [ErrorCode.TOO_MANY_SUBSCRIPTIONS, [AblyCode.BAD_REQUEST, 400]],
  [ErrorCode.TOO_MANY, [AblyCode.BAD_REQUEST, 400]],
  [ErrorCode.RATE_LIMITED, [AblyCode.RATE_LIMITED, 429]],
  [ErrorCode.OVER_QUOTA, [AblyCode.RATE_LIMITED, 429]],
  [ErrorCode.FORBIDDEN, [AblyCode.CAPABILITY, 401]],
  [ErrorCode.UNAUTHORIZED, [AblyCode.NO_CREDENTIALS, 401]],
  [ErrorCode.TOKEN_EXPIRED, [AblyCode.TOKEN_EXPIRED, 401]],
  [ErrorCode.PAYLOAD_TOO_LARGE, [AblyCode.MESSAGE_TOO_LARGE, 400]],
  [ErrorCode.UNAVAILABLE, [AblyCode.UNAVAILABLE, 500]],
  [ErrorCode.NOT_FOUND, [AblyCode.NOT_FOUND, 404]],
  [ErrorCode.METHOD_NOT_ALLOWED, [AblyCode.BAD_REQUEST, 405]]
]);

/** @returns {{code: number, statusCode: number, message: string}} Ably's ErrorInfo for any error of the family */
export function errorInfo(err) {
  if (err instanceof AblyError) return { code: err.ablyCode, statusCode: err.statusCode, message: err.message };
  const [code, statusCode] = FROM_FAMILY.get(err.code) ?? [AblyCode.INTERNAL, 500];
  return { code, statusCode, message: err.message };
}
