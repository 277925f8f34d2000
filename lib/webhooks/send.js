// POSTs signed webhook bodies through one client for every target of the
// process (../backend/http.js): connections pooled and kept alive, at most
// CONNECTIONS_PER_ORIGIN to one origin and MAX_ORIGINS origins at once (so a
// huge list of targets cannot open sockets without bound), redirects not
// followed, each attempt bounded in time. A target's batches go one at a
// time, in the events' order (./queue.js).
import { BackendClient, BackendError } from '../backend/http.js';
import { InternalCode } from '../core/errors.js';
import { hmacHex, SIGNATURE_HEADER, SIGNATURE_PREFIX } from './sign.js';

/** ms for one attempt, connect to the end of the answer: past it the attempt failed and is retried. */
const ATTEMPT_TIMEOUT_MS = 5000;
const MAX_ANSWER_BYTES = 1024 * 1024; // the answer is not used; an endpoint that says more is misbehaving
const CONNECTIONS_PER_ORIGIN = 4;
const MAX_ORIGINS = 256; // a target past it fails its attempt (retried) until an idle origin's sockets close

/** The process's one client for webhook targets. */
export function webhookClient() {
  return new BackendClient({ timeoutMs: ATTEMPT_TIMEOUT_MS, connections: CONNECTIONS_PER_ORIGIN, maxOrigins: MAX_ORIGINS, maxBytes: MAX_ANSWER_BYTES });
}

/**
 * @typedef {object} WebhookTarget
 * @property {string} url
 * @property {string} secret the HMAC key of its signature
 * @property {string} [signatureHeader] where the signature goes (another protocol's format names its own)
 * @property {string} [signaturePrefix] before the hex
 * @property {Object<string, string>} [headers] sent with every body
 */

/**
 * @param {BackendClient} client
 * @param {WebhookTarget} target
 * @returns {(body: string) => Promise<void>} resolves on a 2xx answer; rejects
 *   on anything else (another status, a timeout, a reset)
 */
export function webhookSender(client, { url, secret, signatureHeader = SIGNATURE_HEADER, signaturePrefix = SIGNATURE_PREFIX, headers = {} }) {
  const target = new URL(url);
  return async (body) => {
    const answer = await client.post(target, body, { ...headers, [signatureHeader]: signaturePrefix + hmacHex(secret, body) });
    if (answer instanceof BackendError) throw answer;
    if (answer.status < 200 || answer.status > 299) throw new BackendError(InternalCode.STATUS, `the webhook endpoint answered ${answer.status}`);
  };
}
