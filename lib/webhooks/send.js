// POSTs one signed webhook body to --webhook-url, through the gateway's one
// client for the application's backend (../backend/http.js): one kept-alive
// connection (batches go one at a time, in the events' order), redirects not
// followed, each attempt bounded in time.
import { BackendClient, BackendError } from '../backend/http.js';
import { InternalCode } from '../core/errors.js';
import { SIGNATURE_HEADER } from './sign.js';

/** ms for one attempt, connect to the end of the answer: past it the attempt failed and is retried. */
const ATTEMPT_TIMEOUT_MS = 5000;
const MAX_ANSWER_BYTES = 1024 * 1024; // the answer is not used; an endpoint that says more is misbehaving

/**
 * @param {string} url
 * @param {string} [signatureHeader] where the signature goes (another protocol's format names its own)
 * @param {object} [headers] sent with every body
 * @returns {(body: string, signature: string) => Promise<void>} resolves on a
 *   2xx answer; rejects on anything else (another status, a timeout, a reset)
 */
export function webhookSender(url, signatureHeader = SIGNATURE_HEADER, headers = {}) {
  const client = new BackendClient({ timeoutMs: ATTEMPT_TIMEOUT_MS, connections: 1, maxBytes: MAX_ANSWER_BYTES });
  const target = new URL(url);
  return async (body, signature) => {
    const answer = await client.post(target, body, { ...headers, [signatureHeader]: signature });
    if (answer instanceof BackendError) throw answer;
    if (answer.status < 200 || answer.status > 299) throw new BackendError(InternalCode.STATUS, `the webhook endpoint answered ${answer.status}`);
  };
}
