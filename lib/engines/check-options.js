// An engine and its parts refuse, where they are built, a number they need
// that is missing or not finite: Node turns a timer of NaN ms into 1 ms (a
// busy loop, with only a warning), and NaN in a bound lets everything
// through or nothing. The gateway's options are checked against their table
// (lib/config/options.js) before any of this is built; this holds for whoever else
// builds an engine (a script, a test) and names what is missing.

/**
 * @param {string} what the component being built, for the error
 * @param {object} options
 * @param {Record<string, number>} minimums the name of each option to check -> its least value
 * @throws {RangeError} naming the first option that is missing, not a finite number, or below its least value
 */
export function requireNumbers(what, options, minimums) {
  for (const name in minimums) {
    const value = options[name];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < minimums[name]) {
      const got = value === undefined ? 'nothing' : typeof value === 'number' ? String(value) : JSON.stringify(value);
      throw new RangeError(`${what}: option ${name} must be a finite number of at least ${minimums[name]}, got ${got}`);
    }
  }
}
