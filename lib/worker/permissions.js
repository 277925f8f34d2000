// A token's channel permissions, compiled once into something cheap to test.
//
// A pattern is a channel name, or a prefix ending in `*` (`chat:*`; `*` alone
// allows every channel), and may hold `{sub}`, replaced by the token's `sub`.
// Only a `*` written as the pattern's last character is a wildcard: the
// substituted `sub` is always literal, so a user called `*` with `user:{sub}`
// gets the one channel `user:*`, never every `user:` channel.
//
// Connections whose tokens carry the same claims share one compiled object
// (a small cache keyed by the claims' text), so an authenticated connection
// holds a reference, not a copy.

const PATTERN = /^[A-Za-z0-9_.:@/{}-]{0,256}\*?$/;
const MAX_PATTERNS = 256;
const CACHE_SIZE = 1000;
const NONE = Object.freeze({ any: false, exact: new Set(), prefixes: [] });

const cache = new Map(); // claims text -> compiled permissions

/**
 * @param {string} sub the token's user id
 * @param {*} subscribe the `subscribe` claim, as the token holds it
 * @param {*} publish the `publish` claim
 * @returns {{subscribe: object, publish: object}|string} the permissions, or what is wrong with the claims
 */
export function compilePermissions(sub, subscribe, publish) {
  const problem = checkPatterns('subscribe', subscribe) ?? checkPatterns('publish', publish);
  if (problem) return problem;
  const templated = [subscribe, publish].some((list) => list?.some((p) => p.includes('{sub}')));
  const key = JSON.stringify([templated ? sub : '', subscribe, publish]);
  let compiled = cache.get(key);
  if (compiled === undefined) {
    compiled = Object.freeze({ subscribe: compileList(subscribe, sub), publish: compileList(publish, sub) });
    if (cache.size >= CACHE_SIZE) cache.clear(); // bounded; entries still referenced stay alive through their connections
    cache.set(key, compiled);
  }
  return compiled;
}

/** Whether one compiled list (a token's subscribe or publish) allows `channel`. */
export function allows(list, channel) {
  if (list.any || list.exact.has(channel)) return true;
  for (const prefix of list.prefixes) if (channel.startsWith(prefix)) return true;
  return false;
}

function checkPatterns(claim, list) {
  if (list === undefined) return undefined;
  if (!Array.isArray(list)) return `${claim} must be an array of channel patterns`;
  if (list.length > MAX_PATTERNS) return `${claim} holds more than ${MAX_PATTERNS} patterns`;
  for (const pattern of list) {
    if (typeof pattern !== 'string' || pattern === '' || !PATTERN.test(pattern)) return `${claim} holds an invalid pattern`;
    if (pattern.replaceAll('{sub}', '').includes('{') || pattern.replaceAll('{sub}', '').includes('}')) {
      return `${claim} holds an invalid pattern`;
    }
  }
  return undefined;
}

function compileList(list, sub) {
  if (list === undefined || list.length === 0) return NONE;
  const out = { any: false, exact: new Set(), prefixes: [] };
  for (const pattern of list) {
    const wildcard = pattern.endsWith('*');
    const text = (wildcard ? pattern.slice(0, -1) : pattern).replaceAll('{sub}', sub);
    if (!wildcard) out.exact.add(text);
    else if (text === '') out.any = true;
    else out.prefixes.push(text);
  }
  return Object.freeze(out);
}
