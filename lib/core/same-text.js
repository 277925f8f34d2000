// One constant-time comparison of a secret (or anything an attacker may
// probe: a key, a signature, a digest) with what it should be, for every way
// in. The texts' SHA-256 digests are compared, so neither how long the
// comparison takes nor whether it even ran tells anything of the length.
import { createHash, timingSafeEqual } from 'node:crypto';

/** Whether `given` (any value) is the string `expected`, compared in constant time. */
export function sameText(given, expected) {
  return typeof given === 'string' && timingSafeEqual(sha256(given), sha256(expected));
}

function sha256(text) {
  return createHash('sha256').update(text).digest();
}
