// Tokens for the auth tests, signed two independent ways: with jose, and by
// hand with node:crypto, so the gateway's verification is not checked only
// against the library it uses.
import { createHmac, createSign, generateKeyPairSync } from 'node:crypto';
import { SignJWT } from 'jose';

export const SECRET = 'test-secret-that-is-long-enough-0123456789';

/** Seconds since the epoch, as JWT claims count. */
export const nowS = () => Math.floor(Date.now() / 1000);

/** HS256 with jose; `claims` may override `exp` (default an hour ahead). */
export function joseHs256(claims, secret = SECRET) {
  const { exp = nowS() + 3600, ...rest } = claims;
  return new SignJWT(rest).setProtectedHeader({ alg: 'HS256' }).setExpirationTime(exp).sign(new TextEncoder().encode(secret));
}

/** A JWT assembled by hand: header and claims as given, signed by `sign(input)` (a Buffer), or unsigned. */
export function handToken(header, claims, sign) {
  const input = `${b64(JSON.stringify(header))}.${b64(JSON.stringify({ exp: nowS() + 3600, ...claims }))}`;
  return `${input}.${sign ? sign(input).toString('base64url') : ''}`;
}

export const hmacSign = (key) => (input) => createHmac('sha256', key).update(input).digest();
export const rsaSign = (privateKey) => (input) => createSign('RSA-SHA256').update(input).sign(privateKey);

/** An RSA key pair with the public key as PEM text. */
export function rsaKeys() {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { publicKey, privateKey, publicPem: publicKey.export({ type: 'spki', format: 'pem' }) };
}

function b64(text) {
  return Buffer.from(text).toString('base64url');
}
