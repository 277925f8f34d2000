// A presence channel's members from the engine's entries (one per client),
// as Pusher shows them: one member per user, with the info its last entry
// gave. Read by a presence subscription's answer and by the HTTP API.

/**
 * @param {Object<string, {user?: string, info?: *}>} clients the engine's presence entries by client id
 * @returns {Object<string, *>} user id -> info (null when none), without a prototype: a user may be called __proto__
 */
export function membersOf(clients) {
  const members = Object.create(null);
  for (const entry of Object.values(clients)) if (typeof entry.user === 'string') members[entry.user] = entry.info ?? null;
  return members;
}

/** pusher_internal:subscription_succeeded's data on a presence channel: its members. */
export function presenceData(clients) {
  const hash = membersOf(clients);
  const ids = Object.keys(hash);
  return JSON.stringify({ presence: { ids, hash, count: ids.length } });
}
