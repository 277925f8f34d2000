// Ably capabilities: {resource: [operation, …]}, a resource being a channel
// name, `*` (every channel), or a prefix ending in `*` (`chat:*`); the
// operations publish, subscribe, presence, history, or `*` (all). Their form
// is the core's rule (lib/core/capability.js), shared with the apps' keys.
import { capabilityProblem } from '../core/capability.js';
import { AblyCode, AblyError } from './errors.js';

/** Every operation on every channel: a key's capability when it says none. */
export const ALL = Object.freeze({ '*': Object.freeze(['*']) });

/**
 * @param {string} text the capability's JSON, as a TokenRequest carries it
 * @returns {Object<string, string[]>}
 * @throws {AblyError} 40000 for one that is not a capability
 */
export function parseCapability(text) {
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw bad('the capability is not JSON');
  }
  return capabilityOf(parsed);
}

/**
 * @param {*} value a capability as JSON gives it (a key's, from the apps)
 * @returns {Object<string, string[]>} it, checked, in a prototype-less object
 * @throws {AblyError} 40000 for one that is not a capability
 */
export function capabilityOf(value) {
  const problem = capabilityProblem(value);
  if (problem !== undefined) throw bad(`the capability ${problem}`);
  const out = Object.create(null);
  for (const resource of Object.keys(value)) out[resource] = [...value[resource]];
  return out;
}

/** Whether `capability` lets `operation` be done on channel `name`. */
export function allows(capability, name, operation) {
  for (const resource in capability) {
    if (!matches(resource, name)) continue;
    const operations = capability[resource];
    if (operations.includes('*') || operations.includes(operation)) return true;
  }
  return false;
}

/** Whether the capability lets anything be done on channel `name` (an attach needs one operation). */
export function allowsAny(capability, name) {
  for (const resource in capability) if (matches(resource, name)) return true;
  return false;
}

/**
 * What a token may do: what it asked for, within what its key may do.
 * @throws {AblyError} 40160 when nothing is left
 */
export function intersect(keyCapability, requested) {
  if (requested === undefined) return keyCapability;
  const out = Object.create(null);
  for (const resource in requested) {
    const operations = requested[resource].filter((op) => (op === '*' ? allowsAll(keyCapability, resource) : allowsResource(keyCapability, resource, op)));
    if (operations.length > 0) out[resource] = operations;
  }
  if (Object.keys(out).length === 0) throw new AblyError(AblyCode.CAPABILITY, 'the requested capability is not within the key\'s');
  return out;
}

function matches(resource, name) {
  if (resource === '*') return true;
  return resource.endsWith('*') ? name.startsWith(resource.slice(0, -1)) : resource === name;
}

/** Whether the key may do `operation` on every channel `resource` covers. */
function allowsResource(capability, resource, operation) {
  for (const own in capability) {
    if (!covers(own, resource)) continue;
    if (capability[own].includes('*') || capability[own].includes(operation)) return true;
  }
  return false;
}

function allowsAll(capability, resource) {
  for (const own in capability) if (covers(own, resource) && capability[own].includes('*')) return true;
  return false;
}

/** Whether a key's resource covers every channel another resource names. */
function covers(own, resource) {
  if (own === '*') return true;
  if (!own.endsWith('*')) return own === resource;
  return resource.startsWith(own.slice(0, -1));
}

function bad(message) {
  return new AblyError(AblyCode.BAD_REQUEST, message);
}
