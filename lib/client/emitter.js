// The smallest event emitter that works the same in browsers and in Node.

export class Emitter {
  #listeners = new Map();

  /** @returns {() => void} removes the listener */
  on(event, listener) {
    let set = this.#listeners.get(event);
    if (set === undefined) this.#listeners.set(event, (set = new Set()));
    set.add(listener);
    return () => this.off(event, listener);
  }

  off(event, listener) {
    this.#listeners.get(event)?.delete(listener);
  }

  emit(event, ...args) {
    const set = this.#listeners.get(event);
    if (set !== undefined) for (const listener of set) listener(...args);
  }
}
