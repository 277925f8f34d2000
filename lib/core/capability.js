// A capability's form (Ably's: {resource: [operation, …]}, a resource being
// a channel name, `*` or a prefix ending in `*`, the operations publish,
// subscribe, presence, history or `*`): the one rule for a capability a
// TokenRequest asks for (lib/ably/capability.js) and one an app's key is
// given (lib/pusher/apps.js, the apps table).

export const OPERATIONS = Object.freeze(['publish', 'subscribe', 'presence', 'history', '*']);
const MAX_RESOURCES = 100;
const MAX_RESOURCE_LENGTH = 201; // a channel name (200) and a '*'

/**
 * @param {*} value a parsed capability
 * @returns {string|undefined} what is wrong with it, or undefined
 */
export function capabilityProblem(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'must be an object of resources: {"chat:*": ["subscribe", "publish"]}';
  const resources = Object.keys(value);
  if (resources.length === 0 || resources.length > MAX_RESOURCES) return `must name 1 to ${MAX_RESOURCES} resources`;
  for (const resource of resources) {
    const operations = value[resource];
    if (resource.length === 0 || resource.length > MAX_RESOURCE_LENGTH) return `names a resource of 1 to ${MAX_RESOURCE_LENGTH} characters`;
    if (!Array.isArray(operations) || operations.length === 0 || !operations.every((op) => OPERATIONS.includes(op))) {
      return `${JSON.stringify(resource.slice(0, 64))}: the operations are ${OPERATIONS.join(', ')}`;
    }
  }
  return undefined;
}
