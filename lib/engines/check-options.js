// An engine takes its options by name, each missing one its flag's default
// (lib/config/options.js defaultsOf), and refuses, where it is built, a
// number that is not finite: Node turns a timer of NaN ms into 1 ms (a busy
// loop, with only a warning), and NaN in a bound lets everything through or
// nothing. The gateway's options are checked against their table before any
// of this is built; this holds for whoever else builds an engine (a script,
// a test) and names what is wrong. An engine's parts, built by the engine
// alone, take every number they need and refuse a missing one.

/** `given` over `defaults`; an option given as undefined is missing, and defaults. */
export function optionsOver(defaults, given) {
  const out = { ...defaults };
  for (const key in given) if (given[key] !== undefined) out[key] = given[key];
  return out;
}

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
