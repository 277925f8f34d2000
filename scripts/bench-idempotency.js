#!/usr/bin/env node
// What an idempotency key costs the memory engine, alone in one process: memory
// held per key (the JS heap and typed arrays' buffers) (36-character keys on channels like chat:123, as many as the
// engine keeps at most) and the engine's time per publish, unguarded (no key,
// no version) and guarded (a new key and a higher version on every publish,
// so every check misses and every key is kept: the worst case), with the
// keys' store full, as on a gateway that has run a while.
//   npm run bench:idempotency -- [--publishes 2000000] [--against DIR] [--json FILE]
//   (node --expose-gc scripts/bench-idempotency.js …)
// --against: another checkout of this repository (an older tree), measured
// the same way in the same run, side by side.
import { scriptArgs } from './harness/args.js';
import { writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const { values } = scriptArgs({
  usage: '[--publishes 2000000] [--against DIR] [--json FILE]',
  options: {
    publishes: { type: 'string', default: '2000000' },
    against: { type: 'string' },
    json: { type: 'string' }
  }
});
if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');
const PUBLISHES = Number(values.publishes);
const CHANNELS = 1000;
const ROUNDS = 5; // each figure is the best of these: the least disturbed by the rest of the machine
let MemoryEngine, resolveConfig, MAX_IDEMPOTENCY_KEYS, positional;

const channels = Array.from({ length: CHANNELS }, (_, i) => `chat:${i}`);

function newEngine() {
  const engine = new MemoryEngine(resolveConfig({}));
  engine.stop(); // no sweeper: nothing but the publishes runs
  return engine;
}

function publishOne(engine, channel, data, key, version) {
  if (positional) engine.publish(channel, data, undefined, undefined, undefined, key, version);
  else engine.publish(key === undefined ? { channel, data } : { channel, data, idempotencyKey: key, version });
}

/**
 * Heap held per key: the engine's store filled to its bound, measured
 * between two full collections. Each publish brings fresh strings for its
 * channel and key, as one decoded from IPC does: whatever the engine keeps
 * alive of them is counted. The history's growth is taken out (the same
 * publishes without keys, measured alike).
 */
function heapPerKey() {
  const held = (guarded) => {
    const engine = newEngine();
    const versions = new Array(CHANNELS).fill(0);
    for (let c = 0; c < CHANNELS; c++) publishOne(engine, channels[c], '1'); // channel states first
    globalThis.gc();
    const before = heldBytes();
    for (let i = 0; i < MAX_IDEMPOTENCY_KEYS; i++) {
      const c = i % CHANNELS;
      // Decoded as IPC decodes a publish: flat strings (randomUUID's own is a tree of pieces).
      const [channel, key] = JSON.parse(`["chat:${c}","${randomUUID()}"]`);
      if (guarded) publishOne(engine, channel, '1', key, ++versions[c]);
      else publishOne(engine, channel, '1');
    }
    globalThis.gc();
    const bytes = heldBytes() - before;
    if (guarded && engine.figures().idempotencyKeys !== MAX_IDEMPOTENCY_KEYS) throw new Error('keys lost');
    return bytes;
  };
  const plain = held(false);
  return Math.round((held(true) - plain) / MAX_IDEMPOTENCY_KEYS);
}

/** The checkout's commit, for the record. */
function commitOf(root) {
  return execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
}

/** The JS heap and the typed arrays' memory outside it. */
function heldBytes() {
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

/** ns per publish, the best of ROUNDS. */
function nsPerPublish(guarded) {
  let best = Infinity;
  for (let round = 0; round < ROUNDS; round++) {
    const engine = newEngine();
    const versions = new Array(CHANNELS).fill(0);
    const keys = guarded ? Array.from({ length: PUBLISHES }, (_, i) => `k-${round}-${i}-${'x'.repeat(24)}`) : undefined;
    // Fill the store first: the steady state drops the oldest key per publish.
    if (guarded) for (let i = 0; i < MAX_IDEMPOTENCY_KEYS; i++) publishOne(engine, channels[i % CHANNELS], '1', `fill-${i}`, ++versions[i % CHANNELS]);
    globalThis.gc();
    const started = performance.now();
    if (guarded) for (let i = 0; i < PUBLISHES; i++) publishOne(engine, channels[i % CHANNELS], '1', keys[i], ++versions[i % CHANNELS]);
    else for (let i = 0; i < PUBLISHES; i++) publishOne(engine, channels[i % CHANNELS], '1');
    best = Math.min(best, ((performance.now() - started) * 1e6) / PUBLISHES);
  }
  return Math.round(best);
}

/** The figures of the engine in the checkout at `root`. */
async function measure(root) {
  const url = pathToFileURL(path.resolve(root) + '/').href;
  ({ MemoryEngine } = await import(`${url}lib/engines/memory.js`));
  ({ resolveConfig } = await import(`${url}lib/config/options.js`));
  ({ MAX_IDEMPOTENCY_KEYS } = await import(`${url}lib/engines/idempotency.js`));
  // One shape for both interfaces: publish(publication, reply), or the positional one of older trees.
  positional = MemoryEngine.prototype.publish.length > 4;
  return {
    tree: path.resolve(root) === here ? 'this tree' : `against ${root} (${commitOf(root)})`,
    bytesPerKey: heapPerKey(),
    unguardedNsPerPublish: nsPerPublish(false),
    guardedNsPerPublish: nsPerPublish(true)
  };
}

const here = path.resolve(import.meta.dirname, '..');
const trees = [here, ...(values.against ? [values.against] : [])];
const results = [];
for (const root of trees) results.push(await measure(root));
console.log(`idempotency keys on the memory engine (${MAX_IDEMPOTENCY_KEYS} keys of 36 characters; ${PUBLISHES} publishes, best of ${ROUNDS})`);
for (const r of results) {
  console.log(`  ${r.tree}: ${r.bytesPerKey} B per key (heap and buffers), ${r.unguardedNsPerPublish} ns per publish unguarded, ${r.guardedNsPerPublish} ns guarded`);
}
if (values.json) writeFileSync(values.json, JSON.stringify({ publishes: PUBLISHES, results }, null, 2) + '\n');
