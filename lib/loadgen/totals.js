// Adds up the agents' figures: counts and reason tables are summed, histograms
// merged, per-channel arrays summed element by element. Times are the
// exception: the run's connect phase spans the earliest first attempt to the
// latest open.
import { Histogram } from './histogram.js';

const EARLIEST = new Set(['firstAttemptAt']);
const LATEST = new Set(['lastOpenAt', 'at90']);

/** @param {object[]} figures one object per agent, of the same shape */
export function combine(figures) {
  const total = {};
  for (const f of figures) if (f) add(total, f);
  return total;
}

/** Sum of the values of a reason -> count table. */
export function countOf(table = {}) {
  return Object.values(table).reduce((a, b) => a + b, 0);
}

function add(into, from) {
  for (const [key, value] of Object.entries(from)) {
    const have = into[key];
    if (typeof value === 'number') {
      if (have === undefined) into[key] = value;
      else if (EARLIEST.has(key)) into[key] = Math.min(have || value, value || have);
      else if (LATEST.has(key)) into[key] = Math.max(have, value);
      else into[key] = have + value;
    } else if (Array.isArray(value)) {
      into[key] = have ? have.map((v, i) => v + value[i]) : [...value];
    } else if (value !== null && typeof value === 'object' && 'buckets' in value) {
      into[key] = (have ?? new Histogram()).merge(value);
    } else if (value !== null && typeof value === 'object') {
      add((into[key] ??= {}), value);
    }
  }
}
