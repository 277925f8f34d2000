// A client's value as an error message names it: the one way every check
// (a frame's, a server API call's, an admin call's) quotes what it refused.
// Plain JavaScript with no imports, for the browser client's checks too.

/**
 * A string quoted and cut to 64 characters, null, a number or a boolean as
 * is, anything else by its type. Never String(value): an array nested
 * thousands deep overflows the stack in its toString, and an object's own
 * `toString` may be anything but a function.
 */
export function quoted(value) {
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 64));
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return `${value}`;
  return Array.isArray(value) ? '(an array)' : `(an ${typeof value})`;
}
