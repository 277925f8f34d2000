// A token's channel permissions, compiled once into something cheap to test.
//
// A pattern is a channel name, or a prefix ending in `*` (`chat:*`; `*` alone
// allows every channel), and may hold `{sub}`, which stands for the token's
// `sub`. Only a `*` written as the pattern's last character is a wildcard: the
// sub is always matched literally, so a user called `*` with `user:{sub}` gets
// the one channel `user:*`, never every `user:` channel.
//
// The compiled form does not hold the sub (a test is given it), so every
// connection whose token carries the same claims shares one object, found in
// a small cache keyed by the claims' text (PermissionsCache, one per
// verifier): an authenticated connection holds a reference, not a copy.

const PATTERN = /^(?:[A-Za-z0-9_.:@/-]|\{sub\})+\*?$|^\*$/;
const MAX_PATTERNS = 256;
const MAX_PATTERN_LENGTH = 256;
const CACHE_SIZE = 1000;

/**
 * @param {*} subscribe the `subscribe` claim, as the token holds it
 * @param {*} publish the `publish` claim
 * @returns {{subscribe: object, publish: object}|string} the permissions, or what is wrong with the claims
 */
export function compilePermissions(subscribe, publish) {
  const problem = checkPatterns('subscribe', subscribe) ?? checkPatterns('publish', publish);
  if (problem) return problem;
  return Object.freeze({ subscribe: compileList(subscribe), publish: compileList(publish) });
}

/** Compiled permissions shared by the identities whose claims are the same text. */
export class PermissionsCache {
  constructor() {
    this.compiled = new Map(); // claims text -> compiled permissions
  }

  /** compilePermissions(), once per distinct pair of claims. */
  compile(subscribe, publish) {
    const key = JSON.stringify([subscribe ?? [], publish ?? []]);
    let compiled = this.compiled.get(key);
    if (compiled === undefined) {
      compiled = compilePermissions(subscribe, publish);
      if (typeof compiled === 'string') return compiled;
      if (this.compiled.size >= CACHE_SIZE) this.compiled.clear(); // bounded; entries in use stay alive through their connections
      this.compiled.set(key, compiled);
    }
    return compiled;
  }
}

/** Whether one compiled list (a token's subscribe or publish) allows `channel` to user `sub`. */
export function allows(list, channel, sub) {
  if (list.any || list.exact.has(channel)) return true;
  for (const prefix of list.prefixes) if (channel.startsWith(prefix)) return true;
  for (const template of list.templates) if (matchesTemplate(template, channel, sub)) return true;
  return false;
}

function checkPatterns(claim, list) {
  if (list === undefined) return undefined;
  if (!Array.isArray(list)) return `${claim} must be an array of channel patterns`;
  if (list.length > MAX_PATTERNS) return `${claim} holds more than ${MAX_PATTERNS} patterns`;
  for (const pattern of list) {
    if (typeof pattern !== 'string' || pattern.length > MAX_PATTERN_LENGTH || !PATTERN.test(pattern)) {
      return `${claim} holds an invalid pattern`;
    }
  }
  return undefined;
}

function compileList(list = []) {
  const out = { any: false, exact: new Set(), prefixes: [], templates: [] };
  for (const pattern of list) {
    const wildcard = pattern.endsWith('*');
    const text = wildcard ? pattern.slice(0, -1) : pattern;
    if (text.includes('{sub}')) out.templates.push({ parts: text.split('{sub}'), wildcard });
    else if (!wildcard) out.exact.add(text);
    else if (text === '') out.any = true;
    else out.prefixes.push(text);
  }
  return Object.freeze(out);
}

// The template's literal parts in order with `sub` between each two, and
// nothing after the last unless the pattern ended in `*`.
function matchesTemplate({ parts, wildcard }, channel, sub) {
  let at = 0;
  for (let i = 0; i < parts.length; i++) {
    if (i > 0) {
      if (!channel.startsWith(sub, at)) return false;
      at += sub.length;
    }
    if (!channel.startsWith(parts[i], at)) return false;
    at += parts[i].length;
  }
  return wildcard || at === channel.length;
}
