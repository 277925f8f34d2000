// Items as they arrive (frames, log lines), and promises for the first one
// that matches a predicate, whether it has arrived already or is still to come.
export class Waitlist {
  constructor(describe) {
    this.items = [];
    this.waiters = new Set();
    this.describe = describe; // () => text for a timeout message
  }

  push(item) {
    this.items.push(item);
    for (const w of this.waiters) if (w.predicate(item)) w.resolve(item);
  }

  /**
   * @param {(item) => boolean} predicate
   * @param {number} timeout ms
   * @param {Promise} [giveUp] rejects the wait when it settles (e.g. the source closed)
   */
  wait(predicate, timeout, giveUp) {
    const seen = this.items.find(predicate);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const waiter = { predicate };
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`nothing matching within ${timeout} ms; ${this.describe()}`));
      }, timeout);
      waiter.resolve = (item) => {
        done();
        resolve(item);
      };
      giveUp?.then(
        (why) => (done(), reject(new Error(String(why)))),
        (err) => (done(), reject(err))
      );
      this.waiters.add(waiter);
    });
  }
}
