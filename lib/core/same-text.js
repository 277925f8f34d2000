// One constant-time comparison of a secret (or anything an attacker may
// probe: a key, a signature, a digest) with what it should be, for every way
// in. The texts' SHA-256 digests are compared, so neither how long the
// comparison takes nor whether it even ran tells anything of the length.
import { hash, timingSafeEqual } from 'node:crypto';

/** Whether `given` (any value) is the string `expected`, compared in constant time. */
export function sameText(given, expected) {
  return sameDigest(given, digestOf(expected));
}

/**
 * sameText against a digest made once (digestOf): for a secret compared at
 * every handshake, so each comparison hashes only what was given.
 */
export function sameDigest(given, expectedDigest) {
  return typeof given === 'string' && timingSafeEqual(digestOf(given), expectedDigest);
}

/** @returns {Buffer} the SHA-256 digest sameDigest compares against */
export function digestOf(text) {
  return hash('sha256', text, 'buffer');
}
