// A client on another worker under --balance even, for the tests of every
// protocol: the primary sends a connection to the worker holding fewest, by
// counts that lag behind closes (an earlier test's clients may not be
// counted out yet). So a client that lands beside the other one is held,
// tipping the count a little more each try, until one lands elsewhere; those
// held are closed then.

/**
 * @param {string} worker the worker to keep away from
 * @param {() => Promise<{client: object, worker: string}>} open a new client, once connected, and its worker
 * @param {(client: object) => void} close
 * @returns {Promise<object>} a client on another worker
 */
export async function clientElsewhere(worker, open, close, tries = 10) {
  const beside = [];
  try {
    for (let i = 0; i < tries; i++) {
      const opened = await open();
      if (opened.worker !== worker) return opened.client;
      beside.push(opened.client);
    }
  } finally {
    for (const client of beside) close(client);
  }
  throw new Error(`no client landed on a worker other than ${worker} in ${tries} tries`);
}
