// POSTs one signed webhook body to --webhook-url. The one place that speaks
// HTTP for webhooks (kept to one function, so it can move onto the hooks'
// shared backend client): undici's Agent keeps the connection to the
// endpoint alive between batches; redirects are not followed.
import { Agent, request } from 'undici';
import { SIGNATURE_HEADER } from './sign.js';

/** ms for one attempt, connect to the end of the answer: past it the attempt failed and is retried. */
export const ATTEMPT_TIMEOUT_MS = 5000;

/**
 * @param {string} url
 * @returns {(body: string, signature: string) => Promise<void>} resolves on a
 *   2xx answer; rejects on anything else (another status, a timeout, a reset)
 */
export function webhookSender(url) {
  // Batches go one at a time (their order is the events' order): one connection, kept.
  const dispatcher = new Agent({ connections: 1, keepAliveTimeout: 30000, connect: { timeout: ATTEMPT_TIMEOUT_MS } });
  return async (body, signature) => {
    const answer = await request(url, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signature },
      body,
      signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS)
    });
    await answer.body.dump(); // the answer's body is not read: the status says it all
    if (answer.statusCode < 200 || answer.statusCode > 299) throw new Error(`the webhook endpoint answered ${answer.statusCode}`);
  };
}
