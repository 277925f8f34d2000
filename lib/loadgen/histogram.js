// A log-linear histogram of non-negative integers (microseconds here), in the
// spirit of HdrHistogram: exact below 2^SUB_BITS, then 2^(SUB_BITS-1) buckets
// per power of two, so any percentile is within 1/128 (0.8 %) of the truth.
// Recording is O(1) with no allocation, and nothing is kept per value: a run of
// millions of messages costs the same few KiB as a run of ten. Min, max, mean
// and standard deviation are exact.

import { rankOf } from './quantile.js';

const SUB_BITS = 8;
const HALF = 1 << (SUB_BITS - 1);
const MAX_VALUE = 2 ** 31 - 1; // ~36 minutes in microseconds; larger values are clamped
const BUCKETS = (31 - SUB_BITS + 1) * HALF + (1 << SUB_BITS);

export class Histogram {
  constructor() {
    this.counts = new Float64Array(BUCKETS);
    this.count = 0;
    this.sum = 0;
    this.sumSquares = 0;
    this.min = Infinity;
    this.max = 0;
  }

  record(value) {
    const v = value < 0 ? 0 : value > MAX_VALUE ? MAX_VALUE : Math.round(value);
    this.counts[bucketOf(v)]++;
    this.count++;
    this.sum += v;
    this.sumSquares += v * v;
    if (v < this.min) this.min = v;
    if (v > this.max) this.max = v;
  }

  /** The value at quantile q (0..1), by ./quantile.js's rank: the middle of its bucket, clamped to [min, max]. */
  quantile(q) {
    if (this.count === 0) return 0;
    const rank = rankOf(q, this.count);
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.counts[i];
      if (seen >= rank) return Math.min(this.max, Math.max(this.min, middleOf(i)));
    }
    return this.max;
  }

  get mean() {
    return this.count === 0 ? 0 : this.sum / this.count;
  }

  get stdev() {
    if (this.count === 0) return 0;
    const mean = this.mean;
    return Math.sqrt(Math.max(0, this.sumSquares / this.count - mean * mean));
  }

  /** A compact, JSON-safe form for sending between processes. */
  toJSON() {
    const buckets = [];
    for (let i = 0; i < BUCKETS; i++) if (this.counts[i] > 0) buckets.push(i, this.counts[i]);
    return { buckets, count: this.count, sum: this.sum, sumSquares: this.sumSquares, min: this.min, max: this.max };
  }

  /** Adds another histogram's figures (from toJSON) to this one. */
  merge(other) {
    if (other.count === 0) return this;
    for (let j = 0; j < other.buckets.length; j += 2) this.counts[other.buckets[j]] += other.buckets[j + 1];
    this.count += other.count;
    this.sum += other.sum;
    this.sumSquares += other.sumSquares;
    this.min = Math.min(this.min, other.min);
    this.max = Math.max(this.max, other.max);
    return this;
  }

  static from(json) {
    return new Histogram().merge(json);
  }
}

function bucketOf(v) {
  if (v < 1 << SUB_BITS) return v;
  const shift = 31 - Math.clz32(v) - (SUB_BITS - 1);
  return shift * HALF + (v >>> shift);
}

function middleOf(i) {
  if (i < 1 << SUB_BITS) return i;
  const shift = Math.floor(i / HALF) - 1;
  const sub = i - shift * HALF;
  return sub * 2 ** shift + (2 ** shift - 1) / 2;
}
