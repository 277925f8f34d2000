// The webhook signature: an HMAC-SHA256 of the exact bytes sent, keyed with
// --webhook-secret, so the application can tell the gateway's requests from
// anyone else's (README, Security: how to check it).
import { createHmac } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-gateway-signature';

/** `sha256=<hex>` for the raw body. */
export function signatureOf(secret, body) {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}
