// The webhook signature: an HMAC-SHA256 of the exact bytes sent, keyed with
// the target's secret (--webhook-secret; a Pusher app's secret), so the
// application can tell the gateway's requests from anyone else's (README,
// Security: how to check it). The native header carries `sha256=<hex>`,
// Pusher's X-Pusher-Signature the hex alone.
import { createHmac } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-gateway-signature';
export const SIGNATURE_PREFIX = 'sha256=';

/** The hex HMAC-SHA256 of the raw body. */
export function hmacHex(secret, body) {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/** `sha256=<hex>` for the raw body: the native webhooks' signature. */
export function signatureOf(secret, body) {
  return SIGNATURE_PREFIX + hmacHex(secret, body);
}
