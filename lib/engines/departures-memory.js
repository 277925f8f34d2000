// Departure markers on one machine (--engine memory): a user who left a
// channel, marked for the grace period. An engine shared by several nodes
// brings its own (./redis/departures.js), so that a user who comes back on
// another node finds the marker. The interface: Departures in
// ./index.js.

export class LocalDepartures {
  constructor() {
    this.markers = new Map(); // `${channel}\n${user}` -> token of the departure
  }

  /** Marks the departure `token`. */
  async depart(channel, user, token) {
    this.markers.set(keyOf(channel, user), token);
  }

  /** @returns {Promise<boolean>} whether a departure was marked (and is now undone) */
  async arrive(channel, user) {
    return this.markers.delete(keyOf(channel, user));
  }

  /** @returns {Promise<boolean>} whether departure `token` still stands (its marker is removed) */
  async settle(channel, user, token) {
    const key = keyOf(channel, user);
    if (this.markers.get(key) !== token) return false;
    this.markers.delete(key);
    return true;
  }
}

function keyOf(channel, user) {
  return `${channel}\n${user}`;
}
