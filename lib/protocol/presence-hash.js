// A presence channel's digest: the XOR of its clients' id hashes, so a client
// holding a member list learns from one presence_stats answer whether its
// list matches the gateway's. Kept as clients come and go by both engines
// (Redis: lib/engines/redis/presence.lua, the same arithmetic) and
// recomputed by the client library from its list, in the browser too: no
// imports.

/**
 * A client id's 32-bit FNV-1a hash. Ids are ASCII. The multiplication by the
 * FNV prime (2^24 + 403) is split so no product exceeds 2^53 (Lua's numbers
 * too).
 */
export function clientHash(id) {
  let h = 2166136261;
  for (let i = 0; i < id.length; i++) {
    h = (h ^ id.charCodeAt(i)) >>> 0;
    h = ((h % 256) * 16777216 + h * 403) % 4294967296;
  }
  return h;
}

/** The digest of a list of client ids: the XOR of their hashes (0 for none). */
export function presenceDigest(ids) {
  let digest = 0;
  for (const id of ids) digest = (digest ^ clientHash(id)) >>> 0;
  return digest;
}
