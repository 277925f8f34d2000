// Engine events (occupancy, members) take any number of listeners: native
// webhooks, Pusher's webhooks and the admin page each add one, and each is told.

/** One call that tells each of `listeners` (the list may grow later), in the order they were added. */
export function tellAll(listeners) {
  return (...args) => {
    for (const listener of listeners) listener(...args);
  };
}
